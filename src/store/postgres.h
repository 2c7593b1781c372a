// A thin layer over libpqxx for the PostgreSQL backend: where a store is
// (URI -> connection string, a password-free name for messages, our own
// options), values sent with statements and read back, and one session
// that turns every failure into a one-line core::Error. Private to the
// store component.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::store::pg {

// Any byte string as text PostgreSQL accepts (UTF-8 without NUL): valid
// UTF-8 without NUL or U+0010 passes unchanged; every other byte (NUL, a
// byte not part of valid UTF-8, and 0x10 itself) becomes 0x10 followed by
// two hex digits. decode_text reverses it exactly, so names and values
// keep every byte a user gave, as in SQLite.
std::string encode_text(std::string_view s);
std::string decode_text(std::string_view s);

// A store location: "postgresql://user[:password]@host[:port]/db[?k=v&...]".
struct Location {
  std::string conninfo;   // what libpq gets (our own options removed)
  std::string display;    // for messages: never holds the password
  std::string artifacts;  // ?artifacts=FOLDER, percent-decoded; may be empty
};
// `location` is the URI after "postgresql:" (or "postgres:"). Throws
// Error(kUsage) for a malformed one.
Location parse_location(std::string_view scheme, std::string_view location);

// A statement parameter in PostgreSQL's text input syntax, or NULL.
struct Value {
  std::string text;
  bool null = false;
};
Value text(std::string_view s);  // encode_text'ed
Value integer(int64_t v);
Value real(double v);          // exact: 17 digits; NaN and infinities spelled out
Value real_or_null(double v);  // NaN as NULL (summaries, as SQLite keeps them)
Value bytes(const void* data, size_t size);
using Values = std::vector<Value>;

// Reading a field back.
std::string get_text(const pqxx::field& f);  // decode_text'ed; NULL reads ""
int64_t get_int(const pqxx::field& f);       // NULL reads 0
double get_real(const pqxx::field& f);       // NULL reads NaN
std::string get_bytes(const pqxx::field& f);

// One connection, opened on first use and again after it was lost. Not
// thread-safe: the store serialises its use.
class Session {
 public:
  Session(Location location, bool read_only, double lock_timeout_seconds);
  const Location& location() const { return location_; }
  // Runs `body` in one transaction and commits it. A deadlock or
  // serialisation failure runs it again, and so does a connection that
  // broke before the commit (once, on a new connection); `body` must
  // therefore start from scratch each time. Any other failure throws
  // core::Error naming the store in one line.
  void transact(const std::function<void(pqxx::work&)>& body);
  // Connects now; throws Error(kStore) naming the store when it cannot.
  void connect();

 private:
  Location location_;
  bool read_only_;
  double lock_timeout_seconds_;
  std::unique_ptr<pqxx::connection> conn_;
};

// Runs a statement with parameters $1..$n.
pqxx::result exec(pqxx::work& w, const std::string& sql, const Values& params = {});

}  // namespace trainscope::store::pg
