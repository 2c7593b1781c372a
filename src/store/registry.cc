#include "trainscope/store/registry.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "backends.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::store {
using core::ErrorKind;
using core::fail;

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StoreFactory> factories;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: stores may close during exit
    reg->factories["sqlite"] = open_sqlite;
#ifdef TRAINSCOPE_POSTGRES
    for (const char* scheme : {"postgresql", "postgres"})
      reg->factories[scheme] = [scheme](std::string_view location, const StoreOptions& o) {
        return open_postgres(scheme, location, o);
      };
#endif
    return reg;
  }();
  return *r;
}

// "sqlite:..." has a scheme; "runs/t.db", "./x:y" and "C:\..." do not.
bool has_scheme(std::string_view uri, size_t colon) {
  if (colon == std::string_view::npos || colon < 2) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = uri[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Removes "password=..." from a URI's query; its value, if there was one.
std::string take_password_param(std::string& query) {
  std::string kept, password;
  size_t pos = 0;
  while (pos < query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (kv.starts_with("password=")) {
      password = percent_decoded(kv.substr(9));
    } else if (!kv.empty()) {
      kept += (kept.empty() ? "" : "&") + kv;
    }
  }
  query = kept;
  return password;
}

// What a path that is not a regular file is, for messages.
const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// A SQLite store is a regular file, or one yet to be created, and so are
// the files SQLite keeps beside it. Anything else is refused before SQLite
// opens it: a FIFO blocks the open forever, /dev/null swallows every write
// and reads back empty, a socket or a device fails deep inside SQLite.
void check_sqlite_path(std::string_view location, const std::string& shown) {
  if (location == ":memory:" || location.starts_with("file:")) return;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string path = std::string(location) + suffix;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) continue;  // absent: created
    if (S_ISDIR(st.st_mode) && !*suffix)
      fail(ErrorKind::kUsage, "store '{}' is a folder; give a database file in it, such as '{}'",
           shown, core::escape_for_display(path + "/trainscope.db"));
    fail(ErrorKind::kUsage,
         "store '{}': '{}' is {}, not a database file; give the path of a file (created if "
         "missing), such as sqlite:./trainscope.db",
         shown, core::escape_for_display(path), file_kind(st.st_mode));
  }
}

// Each port of a PostgreSQL URI ("host:port", "[::1]:port", a list of
// hosts, ?port=) is a number in 1..65535 or left out, so that a typo is a
// usage error here rather than a failed connection.
void check_port(const std::string& port, const std::string& shown) {
  if (port.empty()) return;
  const bool digits = port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)
    fail(ErrorKind::kUsage, "store '{}': port '{}' is not a number in 1..65535", shown,
         core::escape_for_display(port));
}

void check_postgres_ports(std::string_view location, const std::string& shown) {
  std::string_view rest = location;
  if (rest.starts_with("//")) rest.remove_prefix(2);
  const size_t end = rest.find_first_of("/?");
  std::string_view hosts = rest.substr(0, end);
  if (const size_t at = hosts.rfind('@'); at != std::string_view::npos) hosts.remove_prefix(at + 1);
  for (size_t start = 0; start <= hosts.size();) {
    size_t comma = hosts.find(',', start);
    if (comma == std::string_view::npos) comma = hosts.size();
    const std::string_view host = hosts.substr(start, comma - start);
    start = comma + 1;
    const size_t close = host.starts_with("[") ? host.find(']') : 0;
    const size_t colon = host.find(':', close == std::string_view::npos ? 0 : close);
    if (colon != std::string_view::npos) check_port(std::string(host.substr(colon + 1)), shown);
  }
  const size_t q = location.find('?');
  for (size_t at = q; at != std::string_view::npos && at < location.size();) {
    const size_t amp = location.find('&', at + 1);
    const std::string_view kv = location.substr(at + 1, amp - at - 1);
    at = amp;
    if (!kv.starts_with("port=")) continue;
    std::string ports(kv.substr(5));
    for (size_t s = 0; s <= ports.size();) {
      size_t c = ports.find(',', s);
      if (c == std::string::npos) c = ports.size();
      check_port(percent_decoded(ports.substr(s, c - s)), shown);
      s = c + 1;
    }
  }
}

}  // namespace

UriPassword split_password(std::string_view uri) {
  const std::string s(uri);
  if (!s.starts_with("postgresql://") && !s.starts_with("postgres://")) return {s, {}};
  const size_t start = s.find("//") + 2;
  const size_t q = s.find('?', start);
  std::string head = s.substr(0, q), query = q == std::string::npos ? "" : s.substr(q + 1);
  UriPassword out;
  out.password = take_password_param(query);
  const size_t slash = head.find('/', start);
  const size_t at = head.substr(0, slash).rfind('@');
  if (at != std::string::npos && at > start) {
    const size_t colon = head.find(':', start);
    if (colon < at) {
      out.password = percent_decoded(head.substr(colon + 1, at - colon - 1));
      head.erase(colon, at - colon);
    }
  }
  out.uri = head + (query.empty() ? "" : "?" + query);
  return out;
}

void register_backend(const std::string& scheme, StoreFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[scheme] = std::move(factory);
}

std::vector<std::string> backend_schemes() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [scheme, f] : r.factories) out.push_back(scheme);
  return out;
}

StoreUri parse_store_uri(std::string_view uri) {
  StoreUri out;
  const size_t colon = uri.find(':');
  if (has_scheme(uri, colon)) {
    out.scheme = std::string(uri.substr(0, colon));
    uri.remove_prefix(colon + 1);
    // "scheme://rest": the authority form keeps what follows the slashes.
    // For SQLite it reads as SQLAlchemy and MLflow read it: an empty host,
    // then the path, so "sqlite:///x.db" is the relative "x.db" and
    // "sqlite:////abs/x.db" the absolute "/abs/x.db" ("sqlite:PATH" is PATH).
    if (uri.starts_with("//")) {
      uri.remove_prefix(2);
      if (out.scheme == "sqlite" && uri.starts_with("/")) uri.remove_prefix(1);
    }
  } else {
    out.scheme = "sqlite";
  }
  out.location = std::string(uri);
  return out;
}

std::string absolute_uri(std::string_view uri) {
  const StoreUri u = parse_store_uri(uri);
  if (u.scheme != "sqlite" || u.location.empty() || u.location == ":memory:" ||
      u.location.starts_with("file:") || std::filesystem::path(u.location).is_absolute())
    return std::string(uri);
  std::error_code ec;
  const auto abs = std::filesystem::absolute(u.location, ec);
  return ec ? std::string(uri) : "sqlite:" + abs.lexically_normal().string();
}

std::unique_ptr<Store> open_backend(const StoreOptions& options) {
  StoreUri u = parse_store_uri(options.uri);
  StoreFactory factory;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.factories.find(u.scheme);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& s : backend_schemes()) known += (known.empty() ? "" : ", ") + s + ":";
    fail(ErrorKind::kUsage, "store '{}': no backend for scheme '{}' in this build (known: {})",
         core::escape_for_display(options.uri), core::escape_for_display(u.scheme), known);
  }
  if (u.location.empty())
    fail(ErrorKind::kUsage,
         "store '{}' names no location; use sqlite:PATH or postgresql://USER@HOST:PORT/DB",
         core::escape_for_display(options.uri));
  const std::string shown = core::escape_for_display(split_password(options.uri).uri);
  if (u.scheme == "sqlite") check_sqlite_path(u.location, shown);
  if (u.scheme == "postgresql" || u.scheme == "postgres") check_postgres_ports(u.location, shown);
  return factory(u.location, options);
}

}  // namespace trainscope::store
