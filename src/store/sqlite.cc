#include "sqlite.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainscope/core/util.h"

namespace trainscope::store::sqlite {
using core::Error;
using core::ErrorKind;

void Db::exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(err);
    raise(rc, fmt::format("'{}'", std::string_view(sql).substr(0, 60)));
  }
}

namespace {

// The file size limit (`ulimit -f`) in bytes when a file of the store at
// `path` (itself, its -wal, its -journal) has reached it, else 0: SIGXFSZ
// is caught, a write past it fails EFBIG, and SQLite says "disk I/O error"
// (its errno is not kept to be asked).
uint64_t size_limit_reached(const std::string& path) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 0;
  const uint64_t limit = lim.rlim_cur;
  for (const char* suffix : {"", "-wal", "-journal"}) {
    struct stat st {};
    // A page short of the limit: the write that failed would not fit.
    if (::stat((path + suffix).c_str(), &st) == 0 &&
        static_cast<uint64_t>(st.st_size) + 65536 > limit)
      return limit;
  }
  return 0;
}

}  // namespace

void Db::check(int rc, std::string_view what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  raise(rc, what);
}

void Db::raise(int rc, std::string_view what) const {
  if ((rc & 0xff) == SQLITE_NOTADB)
    throw Error(fmt::format("store '{}' is not a SQLite database; point the store at a trainscope "
                            "database or a new file",
                            path_),
                ErrorKind::kStore);
  // SQLite's message may quote a damaged schema over many lines: one line,
  // cut short.
  std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::replace_if(
      detail.begin(), detail.end(), [](char ch) { return ch == '\n' || ch == '\r'; }, ' ');
  if (detail.size() > 200) detail = std::string(core::utf8_prefix(detail, 200)) + "...";
  int primary = rc & 0xff;
  // The file size limit (`ulimit -f`; SIGXFSZ is caught, so the write
  // fails EFBIG): said as what it is, not as a disk gone (thirty-fourth
  // hunt, A-D).
  if (const auto limit = primary == SQLITE_IOERR ? size_limit_reached(path_) : 0; limit > 0)
    throw Error(fmt::format("store '{}': {} failed: a file of the store reached the file size "
                            "limit of {} bytes (ulimit -f); raise it: nothing committed earlier "
                            "was lost",
                            path_, what, limit),
                ErrorKind::kStore);
  if (primary == SQLITE_FULL)
    throw Error(fmt::format("store '{}': the disk is full ({} was refused); free space: nothing "
                            "committed earlier was lost",
                            path_, what),
                ErrorKind::kStore);
  std::string hint;
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      hint = "; another process held the store's lock too long: retry, or raise the busy timeout";
      break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      hint = "; check that the file and its folder are writable";
      break;
    case SQLITE_NOTADB:
      hint = "; point the store at a trainscope database or a new file";
      break;
    case SQLITE_CORRUPT:
      hint = "; the file is damaged: restore it from a backup";
      break;
    case SQLITE_IOERR:
      hint = "; an I/O error occurred (disk full or removed?)";
      break;
    default:
      break;
  }
  throw Error(fmt::format("store '{}': {} failed: {}{}", path_, what, detail, hint),
              ErrorKind::kStore);
}

Stmt::Stmt(const Db& db, std::string_view sql) : db_(db), sql_(sql) {
  int rc = sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  db_.check(rc, fmt::format("preparing '{}'", sql_.substr(0, 60)));
}

Stmt& Stmt::bind(int i, int64_t v) {
  db_.check(sqlite3_bind_int64(stmt_, i, v), "bind");
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  db_.check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v), "bind");
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  db_.check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT),
            "bind");
  return *this;
}
Stmt& Stmt::bind_blob(int i, const void* p, size_t n) {
  db_.check(sqlite3_bind_blob64(stmt_, i, p, n, SQLITE_TRANSIENT), "bind");
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  db_.check(sqlite3_bind_null(stmt_, i), "bind");
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  db_.raise(rc, fmt::format("'{}'", sql_.substr(0, 60)));
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

namespace {

[[noreturn]] void not_a_number(sqlite3_stmt* stmt, int col, std::string_view what) {
  // A table's column as table.column; an expression by the name its query
  // gives it (AS "metric_keys.last_step"), never the expression's SQL
  // (twenty-fourth hunt, A-D1).
  const char* table = sqlite3_column_table_name(stmt, col);
  const char* origin = sqlite3_column_origin_name(stmt, col);
  const char* name = sqlite3_column_name(stmt, col);
  const std::string shown = table && origin ? fmt::format("{}.{}", table, origin)
                            : name          ? std::string(name)
                                            : "?";
  core::fail(core::ErrorKind::kStore, "column {} holds {} where {} belongs; the store is damaged",
             core::escape_for_display(shown),
             sqlite3_column_type(stmt, col) == SQLITE_TEXT   ? "text"
             : sqlite3_column_type(stmt, col) == SQLITE_BLOB ? "a blob"
                                                             : "a fraction",
             what);
}

}  // namespace

int64_t Stmt::int64(int col) const {
  switch (sqlite3_column_type(stmt_, col)) {
    case SQLITE_INTEGER:
    case SQLITE_NULL:
      return sqlite3_column_int64(stmt_, col);
    case SQLITE_FLOAT:
      if (const double d = sqlite3_column_double(stmt_, col);
          d == std::floor(d) && std::abs(d) < 9.2e18)
        return static_cast<int64_t>(d);
      break;
    default:
      break;
  }
  not_a_number(stmt_, col, "a whole number");
}

double Stmt::real(int col) const {
  switch (sqlite3_column_type(stmt_, col)) {
    case SQLITE_NULL:
      return std::numeric_limits<double>::quiet_NaN();
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt_, col);
    default:
      not_a_number(stmt_, col, "a number");
  }
}

std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::string_view Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
           : std::string_view();
}

WriteTxn::WriteTxn(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
WriteTxn::~WriteTxn() {
  if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}
void WriteTxn::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

ReadTxn::ReadTxn(Db& db) : db_(db) { db_.exec("BEGIN"); }
ReadTxn::~ReadTxn() { sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr); }

}  // namespace trainscope::store::sqlite
