// SQLite checks shared by the store tests.
#pragma once

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace trainscope::testing {

// The first line of `PRAGMA integrity_check` on a database file ("ok" when
// intact), or a description of why it could not be run.
inline std::string sqlite_integrity(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot open " + path.string();
  }
  sqlite3_stmt* st = nullptr;
  std::string result = "integrity_check returned no row";
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    result = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return result;
}

// Stops process `pid` (SIGSTOP) at a moment it holds no write lock of the
// SQLite store `path`, so that others can still write while it is paused
// (a writer stopped inside a transaction blocks every other writer until
// it goes on). `sql`, if given, runs while it is stopped, in that write
// transaction. True when it is stopped.
inline bool stop_outside_a_write(pid_t pid, const std::filesystem::path& path,
                                 const std::string& sql = {}) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (kill(pid, SIGSTOP) != 0) return false;
    sqlite3* db = nullptr;
    bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK;
    sqlite3_busy_timeout(db, 300);
    ok = ok && sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
    if (ok && !sql.empty())
      ok = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
    if (ok) ok = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    if (ok) return true;
    kill(pid, SIGCONT);  // it was inside a write: let it finish, try again
    usleep(50 * 1000);
  }
  return false;
}

}  // namespace trainscope::testing
