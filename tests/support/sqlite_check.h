// SQLite checks shared by the store tests.
#pragma once

#include <sqlite3.h>

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

}  // namespace trainscope::testing
