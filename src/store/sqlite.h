// Thin RAII layer over the SQLite C API, private to the store component.
// Errors become trainscope::core::Error(kStore) naming the database and what to do.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainscope/core/error.h"

namespace trainscope::store::sqlite {

class Db {
 public:
  Db() = default;
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~Db() {
    if (db_) sqlite3_close_v2(db_);
  }
  Db(Db&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept {
    std::swap(db_, o.db_);
    std::swap(path_, o.path_);
    return *this;
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs one or more statements without results.
  void exec(const char* sql);
  // Throws Error(kStore) for an SQLite result code that is not OK/ROW/DONE.
  void check(int rc, std::string_view what) const;
  [[noreturn]] void raise(int rc, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  Stmt(const Db& db, std::string_view sql);
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, double v);  // NaN binds as NULL (SQLite's own rule)
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind_blob(int i, const void* p, size_t n);
  Stmt& bind_null(int i);

  // Steps once; true when a row is available.
  bool step();
  // Steps to completion (for statements without results).
  void run() {
    while (step()) {
    }
  }
  void reset();

  // A number column as stored. NULL reads as 0 (int64) or NaN (real); text
  // or a blob where a number belongs (or a fraction where a whole number
  // does) throws Error(kStore) naming the column: the store is damaged,
  // and a reader never shows it as 0 or 1970.
  int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string_view blob(int col) const;

 private:
  const Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() was called. Taking
// the write lock up front means a busy writer waits in the busy handler
// instead of failing on a lock upgrade.
class WriteTxn {
 public:
  explicit WriteTxn(Db& db);
  ~WriteTxn();
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  void commit();

 private:
  Db& db_;
  bool done_ = false;
};

// BEGIN (deferred) for consistent multi-statement reads.
class ReadTxn {
 public:
  explicit ReadTxn(Db& db);
  ~ReadTxn();
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;

 private:
  Db& db_;
};

}  // namespace trainscope::store::sqlite
