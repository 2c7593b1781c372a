// The store's schema, as an ordered list of migrations per backend.
// Migration N brings a database from version N-1 to N. Never edit a
// migration that has shipped: add a new one. Both backends hold the same
// tables and columns; each numbers its own versions (a PostgreSQL store
// began at SQLite's version 5).
//
// A migration is SQL, run in the migrating transaction, optionally followed
// by a C++ step and more SQL in the same transaction: what SQL cannot do
// portably (record payloads built from the rows of older tables). A step is
// written once for both backends, against MigrationTxn: it reads rows with
// SQL both dialects share and writes records. Like the SQL, a step is never
// edited once shipped: it spells out the layouts it writes itself, as they
// were when it shipped, rather than calling code that may change later.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::store {

// The migrating transaction, as a C++ step sees it. Every call runs inside
// the transaction; an exception rolls the whole migration back.
class MigrationTxn {
 public:
  // One row of a query's result; columns from 0.
  class Row {
   public:
    virtual int64_t integer(int col) const = 0;  // NULL reads 0
    virtual double real(int col) const = 0;      // NULL reads NaN
    virtual std::string text(int col) const = 0;
    virtual std::string bytes(int col) const = 0;

   protected:
    ~Row() = default;
  };
  virtual ~MigrationTxn() = default;
  // Runs `sql` (no parameters; the same text in both backends) and calls
  // `row` for each row of its result, in order.
  virtual void query(const std::string& sql, const std::function<void(const Row&)>& row) = 0;
  // Adds records of `kind` to the run with id `run_id`, as
  // Store::append_records does (the first of a (kind, key, step) is kept),
  // without its checks.
  virtual void insert_records(int64_t run_id, std::string_view kind,
                              const std::vector<Record>& records) = 0;
};

struct Migration {
  int version;
  const char* description;
  const char* sql;
  // Run after `sql`, then `sql_after`; nullptr: none.
  void (*step)(MigrationTxn& txn) = nullptr;
  const char* sql_after = nullptr;
};

// SQLite's schema.
const std::vector<Migration>& migrations();
// PostgreSQL's: SQLite's tables in PostgreSQL's types (identity columns,
// DOUBLE PRECISION, BYTEA, byte-ordered TEXT) and a settings table.
const std::vector<Migration>& postgres_migrations();

// The step of SQLite's migration 6 and PostgreSQL's 2: copies every row of
// the per-kind tables of schema 5 (fingerprint_tensors, fingerprints,
// profile_cells, profile_layers, histograms, run_events) into records, in
// the layouts of docs/store_format.md ("Records"). The tables are dropped
// by the migration's SQL after it.
void copy_per_kind_tables(MigrationTxn& txn);

}  // namespace trainscope::store
