// The store's schema, as an ordered list of migrations. Migration N brings a
// database from version N-1 to N. Never edit a migration that has shipped:
// add a new one. SQL is kept to what both SQLite and PostgreSQL accept.
#pragma once

#include <vector>

namespace trainscope::store {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

const std::vector<Migration>& migrations();

}  // namespace trainscope::store
