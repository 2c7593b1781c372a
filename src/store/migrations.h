// The store's schema, as an ordered list of migrations per backend.
// Migration N brings a database from version N-1 to N. Never edit a
// migration that has shipped: add a new one. Both backends hold the same
// tables and columns; each numbers its own versions (a PostgreSQL store
// began at SQLite's version 5).
#pragma once

#include <vector>

namespace trainscope::store {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

// SQLite's schema.
const std::vector<Migration>& migrations();
// PostgreSQL's: SQLite's tables in PostgreSQL's types (identity columns,
// DOUBLE PRECISION, BYTEA, byte-ordered TEXT) and a settings table.
const std::vector<Migration>& postgres_migrations();

}  // namespace trainscope::store
