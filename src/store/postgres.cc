#include "postgres.h"

#include <fmt/format.h>
#include <poll.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <utility>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"

namespace pqxx {
// Lets a Value travel as a statement parameter (libpqxx 6's dynamic
// parameters read every value through string_traits).
template <>
struct string_traits<trainscope::store::pg::Value> {
  using Value = trainscope::store::pg::Value;
  static constexpr const char* name() noexcept { return "trainscope::store::pg::Value"; }
  static constexpr bool has_null() noexcept { return true; }
  static bool is_null(const Value& v) { return v.null; }
  static Value null() { return {{}, true}; }
  static void from_string(const char s[], Value& v) { v = {s, false}; }
  static std::string to_string(const Value& v) { return v.text; }
};
}  // namespace pqxx

namespace trainscope::store::pg {
using core::ErrorKind;
using core::fail;

namespace {

constexpr char kEscape = 0x10;
constexpr const char* kHex = "0123456789abcdef";

// Length of the valid UTF-8 sequence starting at s[i] (as PostgreSQL checks
// it: no overlong forms, no surrogates, nothing above U+10FFFF), else 0.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return n;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// libpq's messages span lines ("...failed: Connection refused\n\tIs the
// server running...?"); ours are one line: a run of white space becomes
// one space, or "; " where it held a line break.
std::string one_line(std::string_view message) {
  std::string out;
  bool space = false, newline = false;
  for (char c : message) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      newline |= c == '\n' || c == '\r';
      continue;
    }
    if (space && !out.empty()) out += newline ? "; " : " ";
    space = newline = false;
    out += c;
  }
  for (std::string_view prefix : {"ERROR: ", "FATAL: "})
    if (out.starts_with(prefix)) out.erase(0, prefix.size());
  return out;
}

[[noreturn]] void fail_sql(const Location& where, const pqxx::sql_error& e) {
  const std::string& state = e.sqlstate();
  const std::string what = one_line(e.what());
  if (state == "23503")
    fail(ErrorKind::kNotFound, "store '{}': a run this refers to was deleted meanwhile ({})",
         where.display, what);
  if (state == "53100")
    fail(ErrorKind::kStore, "store '{}': the server's disk is full ({}); free space there",
         where.display, what);
  if (state == "25006")
    fail(ErrorKind::kStore, "store '{}' was opened read-only: {}", where.display, what);
  if (state == "55P03" || state == "57014")
    fail(ErrorKind::kStore, "store '{}': gave up waiting for another writer's lock ({})",
         where.display, what);
  if (state.starts_with("42"))
    fail(ErrorKind::kStore, "store '{}': {} (is this database a trainscope store?)", where.display,
         what);
  fail(ErrorKind::kStore, "store '{}': {}", where.display, what);
}

}  // namespace

std::string encode_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = s[i] == 0 || s[i] == kEscape ? 0 : utf8_length(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i++]);
    out += kEscape;
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string decode_text(std::string_view s) {
  if (s.find(kEscape) == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == kEscape && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 &&
        hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

Location parse_location(std::string_view scheme, std::string_view location) {
  std::string_view rest = location;
  if (rest.starts_with("//")) rest.remove_prefix(2);
  const size_t q = rest.find('?');
  std::string_view query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
  std::string_view path = rest.substr(0, q);
  // The password is the part of the user info after ':' (user:pw@host).
  std::string shown(path);
  const size_t slash = path.find('/');
  const size_t at = path.substr(0, slash).rfind('@');
  if (at != std::string_view::npos) {
    const size_t colon = path.substr(0, at).find(':');
    if (colon != std::string_view::npos)
      shown = std::string(path.substr(0, colon)) + std::string(path.substr(at));
  }
  Location out;
  std::string kept, kept_shown;
  bool has_timeout = false, has_name = false;
  size_t pos = 0;
  while (pos <= query.size() && !query.empty()) {
    const size_t amp = query.find('&', pos);
    const std::string_view kv = query.substr(pos, amp == std::string_view::npos ? amp : amp - pos);
    pos = amp == std::string_view::npos ? query.size() + 1 : amp + 1;
    if (kv.empty()) continue;
    const std::string_view key = kv.substr(0, kv.find('='));
    const std::string_view value = key.size() < kv.size() ? kv.substr(key.size() + 1) : "";
    if (key == "artifacts") {
      out.artifacts = percent_decode(value);
      continue;
    }
    has_timeout |= key == "connect_timeout";
    has_name |= key == "application_name";
    kept += (kept.empty() ? "" : "&") + std::string(kv);
    if (key != "password") kept_shown += (kept_shown.empty() ? "" : "&") + std::string(kv);
  }
  if (path.empty() || path.front() == '?')
    fail(ErrorKind::kUsage,
         "store '{}:{}' names no server; use postgresql://USER@HOST:PORT/DATABASE", scheme, shown);
  std::string extra;
  if (!has_timeout) extra += "&connect_timeout=10";
  if (!has_name) extra += "&application_name=trainscope";
  std::string all = kept + extra;
  if (!all.empty() && all.front() == '&') all.erase(0, 1);
  out.conninfo = "postgresql://" + std::string(path) + (all.empty() ? "" : "?" + all);
  out.display = std::string(scheme) + "://" + shown + (kept_shown.empty() ? "" : "?" + kept_shown);
  return out;
}

Value text(std::string_view s) { return {encode_text(s), false}; }
Value integer(int64_t v) { return {std::to_string(v), false}; }

Value real(double v) {
  if (std::isnan(v)) return {"NaN", false};
  if (std::isinf(v)) return {v > 0 ? "Infinity" : "-Infinity", false};
  return {fmt::format("{:.17g}", v), false};
}

Value real_or_null(double v) { return std::isnan(v) ? Value{{}, true} : real(v); }

Value bytes(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  Value v;
  v.text.resize(2 + 2 * size);
  v.text[0] = '\\';
  v.text[1] = 'x';
  for (size_t i = 0; i < size; ++i) {
    v.text[2 + 2 * i] = kHex[p[i] >> 4];
    v.text[3 + 2 * i] = kHex[p[i] & 15];
  }
  return v;
}

std::string get_text(const pqxx::field& f) {
  if (f.is_null()) return {};
  return decode_text(std::string_view(f.c_str(), f.size()));
}

int64_t get_int(const pqxx::field& f) {
  return f.is_null() ? 0 : std::strtoll(f.c_str(), nullptr, 10);
}

double get_real(const pqxx::field& f) {
  return f.is_null() ? std::nan("") : std::strtod(f.c_str(), nullptr);
}

std::string get_bytes(const pqxx::field& f) {
  std::string_view s(f.c_str(), f.size());
  if (f.is_null() || !s.starts_with("\\x"))
    fail(ErrorKind::kStore, "a binary column did not arrive in hex form");
  s.remove_prefix(2);
  std::string out(s.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) fail(ErrorKind::kStore, "a binary column holds a bad hex digit");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

pqxx::result exec(pqxx::work& w, const std::string& sql, const Values& params) {
  return w.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
}

Session::Session(Location location, bool read_only, double lock_timeout_seconds)
    : location_(std::move(location)),
      read_only_(read_only),
      lock_timeout_seconds_(lock_timeout_seconds) {}

void Session::connect() {
  conn_.reset();
  try {
    auto c = std::make_unique<pqxx::connection>(location_.conninfo);
    if (c->server_version() < 100000)
      fail(ErrorKind::kStore, "store '{}': PostgreSQL {} is too old; trainscope needs 10 or newer",
           location_.display, c->server_version() / 10000);
    // UTF-8 on the wire whatever the environment says (text is encoded for
    // it), bytea in hex, floats with every digit, and a bound on lock waits.
    std::string setup = fmt::format(
        "SET client_encoding = 'UTF8'; SET bytea_output = 'hex'; SET extra_float_digits = 3; "
        "SET lock_timeout = {}; SET TIME ZONE 'UTC';",
        static_cast<int64_t>(lock_timeout_seconds_ * 1000));
    if (read_only_) setup += " SET default_transaction_read_only = on;";
    pqxx::nontransaction(*c).exec(setup);
    conn_ = std::move(c);
  } catch (const pqxx::sql_error& e) {
    fail_sql(location_, e);
  } catch (const pqxx::failure& e) {
    fail(ErrorKind::kStore,
         "store '{}': cannot connect: {}; check the host, port, user, password "
         "(or ~/.pgpass) and database",
         location_.display, one_line(e.what()));
  }
}

namespace {
// The server ended the session (shutdown, pg_terminate_backend, crash).
bool connection_ended(const std::string& sqlstate) {
  return sqlstate.starts_with("57P") || sqlstate.starts_with("08");
}

// An idle connection has nothing to read (trainscope never LISTENs): when
// its socket is readable or hung up, the server has ended it ("terminating
// connection ..." then EOF). Noticed before a statement is sent, it is
// simply opened again; libpqxx 6.4 would otherwise leak the error result
// of the BEGIN that fails on it (as it does for any statement already on
// its way when the server ends the connection: tests/lsan.supp).
bool idle_connection_ended(int fd) {
  if (fd < 0) return true;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}
}  // namespace

void Session::transact(const std::function<void(pqxx::work&)>& body) {
  bool reconnected = false;
  for (int attempt = 0;; ++attempt) {
    try {
      if (conn_ && idle_connection_ended(conn_->sock())) conn_.reset();
      if (!conn_) connect();
      pqxx::work w(*conn_);
      body(w);
      w.commit();
      return;
    } catch (const pqxx::in_doubt_error& e) {
      conn_.reset();
      fail(ErrorKind::kStore,
           "store '{}': the connection broke while committing; the last write may or may not "
           "have landed ({})",
           location_.display, one_line(e.what()));
    } catch (const pqxx::statement_completion_unknown& e) {
      conn_.reset();
      fail(ErrorKind::kStore, "store '{}': the server may or may not have run the last write ({})",
           location_.display, one_line(e.what()));
    } catch (const pqxx::transaction_rollback& e) {
      // Two writers locked rows in opposite orders, or a snapshot went
      // stale: the server rolled the transaction back; run it again.
      if (attempt < 20) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 << std::min(attempt, 6)));
        continue;
      }
      fail(ErrorKind::kStore, "store '{}': {}", location_.display, one_line(e.what()));
    } catch (const pqxx::broken_connection& e) {
      // Nothing was committed: a connection that died while idle (a server
      // restart, a network hiccup) is opened again and the work run once more.
      conn_.reset();
      if (!std::exchange(reconnected, true)) continue;
      fail(ErrorKind::kStore, "store '{}': lost the connection to the server ({})",
           location_.display, one_line(e.what()));
    } catch (const pqxx::sql_error& e) {
      if (!connection_ended(e.sqlstate())) fail_sql(location_, e);
      conn_.reset();
      if (!std::exchange(reconnected, true)) continue;
      fail(ErrorKind::kStore, "store '{}': the server ended the connection ({})", location_.display,
           one_line(e.what()));
    } catch (const pqxx::failure& e) {
      fail(ErrorKind::kStore, "store '{}': {}", location_.display, one_line(e.what()));
    }
  }
}

}  // namespace trainscope::store::pg
