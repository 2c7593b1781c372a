#include "trainscope/store/registry.h"

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
  return factory(u.location, options);
}

}  // namespace trainscope::store
