#include "migrations.h"

namespace trainscope::store {

namespace {

// Migration 1: experiments, runs, params, tags, metrics.
constexpr const char* kSchema1 = R"sql(
CREATE TABLE schema_migrations (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_time REAL NOT NULL
);
CREATE TABLE experiments (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_time REAL NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  name TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK (status IN
    ('created', 'running', 'finished', 'failed', 'killed', 'stopped')),
  start_time REAL NOT NULL,
  end_time REAL,
  heartbeat REAL,
  parent_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  command_line TEXT NOT NULL DEFAULT '',
  config_text TEXT NOT NULL DEFAULT '',
  config_hash TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_experiment ON runs(experiment_id, start_time);
CREATE INDEX runs_by_name ON runs(name);
CREATE TABLE params (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE tags (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE metric_keys (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  last_step INTEGER,
  last_value REAL,
  min_value REAL,
  max_value REAL,
  UNIQUE (run_id, key)
);
CREATE TABLE metric_chunks (
  key_id INTEGER NOT NULL REFERENCES metric_keys(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  n INTEGER NOT NULL,
  first_step INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  points BLOB NOT NULL,
  PRIMARY KEY (key_id, seq)
);
)sql";

// Migration 2: artifacts; host and process of each run for crash detection.
constexpr const char* kSchema2 = R"sql(
ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pid_start INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE artifacts (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  created_time REAL NOT NULL,
  PRIMARY KEY (run_id, name)
);
)sql";

// Migration 3: environment manifest and per-step fingerprints.
constexpr const char* kSchema3 = R"sql(
CREATE TABLE environment (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE fingerprint_tensors (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE TABLE fingerprints (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  hashes BLOB NOT NULL,
  PRIMARY KEY (run_id, step)
);
)sql";

// Migration 4: per-layer profiles.
constexpr const char* kSchema4 = R"sql(
CREATE TABLE profile_cells (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  layer TEXT NOT NULL,
  phase TEXT NOT NULL,
  us REAL NOT NULL,
  PRIMARY KEY (run_id, step, layer, phase)
);
CREATE TABLE profile_layers (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  name TEXT NOT NULL,
  info TEXT NOT NULL,
  PRIMARY KEY (run_id, idx)
);
)sql";

// Migration 5: probes' histograms (bin counts as LEB128 varints) and run events.
constexpr const char* kSchema5 = R"sql(
CREATE TABLE histograms (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  low REAL NOT NULL,
  high REAL NOT NULL,
  nan INTEGER NOT NULL,
  pos_inf INTEGER NOT NULL,
  neg_inf INTEGER NOT NULL,
  counts BLOB NOT NULL,
  PRIMARY KEY (run_id, key, step)
);
CREATE TABLE run_events (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  message TEXT NOT NULL
);
CREATE INDEX run_events_run ON run_events (run_id, id);
)sql";

// Migration 6: records, one series per capability kind, replacing the
// per-kind tables of migrations 3 to 5 (copied into it by
// copy_per_kind_tables, then dropped).
constexpr const char* kSchema6 = R"sql(
CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL,
  payload BLOB NOT NULL,
  UNIQUE (run_id, kind, key, step)
);
CREATE INDEX records_by_kind ON records (run_id, kind, id);
)sql";

// After migration 6's step (and PostgreSQL's 2): the tables it copied.
constexpr const char* kDropPerKindTables = R"sql(
DROP TABLE fingerprint_tensors;
DROP TABLE fingerprints;
DROP TABLE profile_cells;
DROP TABLE profile_layers;
DROP TABLE histograms;
DROP TABLE run_events;
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "experiments, runs, params, tags, metrics", kSchema1},
      {2, "artifacts; host and process of each run for crash detection", kSchema2},
      {3, "environment manifest and per-step fingerprints", kSchema3},
      {4, "per-layer profiles", kSchema4},
      {5, "probes: histograms and run events", kSchema5},
      {6, "records: one series per capability kind, replacing the per-kind tables", kSchema6,
       copy_per_kind_tables, kDropPerKindTables},
  };
  return kMigrations;
}

}  // namespace trainscope::store

namespace trainscope::store {
namespace {

// PostgreSQL migration 1: SQLite's schema 5 in PostgreSQL's types. Text is
// COLLATE "C" where it is sorted or compared, so that it orders by bytes as
// SQLite does, whatever the database's locale. `settings` holds the
// artifact folder every host of a shared store uses.
constexpr const char* kPostgres1 = R"sql(
CREATE TABLE schema_migrations (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_time DOUBLE PRECISION NOT NULL
);
CREATE TABLE settings (
  key TEXT COLLATE "C" PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE experiments (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL UNIQUE,
  created_time DOUBLE PRECISION NOT NULL
);
CREATE TABLE runs (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  uuid TEXT COLLATE "C" NOT NULL UNIQUE,
  experiment_id BIGINT NOT NULL REFERENCES experiments(id),
  name TEXT COLLATE "C" NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK (status IN
    ('created', 'running', 'finished', 'failed', 'killed', 'stopped')),
  start_time DOUBLE PRECISION NOT NULL,
  end_time DOUBLE PRECISION,
  heartbeat DOUBLE PRECISION,
  parent_id BIGINT REFERENCES runs(id) ON DELETE SET NULL,
  command_line TEXT NOT NULL DEFAULT '',
  config_text TEXT NOT NULL DEFAULT '',
  config_hash TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  pid BIGINT NOT NULL DEFAULT 0,
  pid_start BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_experiment ON runs(experiment_id, start_time);
CREATE INDEX runs_by_name ON runs(name);
CREATE INDEX runs_by_status ON runs(status);
CREATE INDEX runs_by_parent ON runs(parent_id);
CREATE TABLE params (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT COLLATE "C" NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE tags (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT COLLATE "C" NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE metric_keys (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT COLLATE "C" NOT NULL,
  count BIGINT NOT NULL DEFAULT 0,
  last_step BIGINT,
  last_value DOUBLE PRECISION,
  min_value DOUBLE PRECISION,
  max_value DOUBLE PRECISION,
  UNIQUE (run_id, key)
);
CREATE TABLE metric_chunks (
  key_id BIGINT NOT NULL REFERENCES metric_keys(id) ON DELETE CASCADE,
  seq BIGINT NOT NULL,
  n BIGINT NOT NULL,
  first_step BIGINT NOT NULL,
  last_step BIGINT NOT NULL,
  points BYTEA NOT NULL,
  PRIMARY KEY (key_id, seq)
);
-- Packed doubles do not compress: storing them uncompressed halves the
-- cost of an append.
ALTER TABLE metric_chunks ALTER COLUMN points SET STORAGE EXTERNAL;
CREATE TABLE artifacts (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT COLLATE "C" NOT NULL,
  kind TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size BIGINT NOT NULL,
  created_time DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (run_id, name)
);
CREATE TABLE environment (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT COLLATE "C" NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE fingerprint_tensors (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE TABLE fingerprints (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step BIGINT NOT NULL,
  hashes BYTEA NOT NULL,
  PRIMARY KEY (run_id, step)
);
ALTER TABLE fingerprints ALTER COLUMN hashes SET STORAGE EXTERNAL;
CREATE TABLE profile_cells (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step BIGINT NOT NULL,
  layer TEXT COLLATE "C" NOT NULL,
  phase TEXT COLLATE "C" NOT NULL,
  us DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (run_id, step, layer, phase)
);
CREATE TABLE profile_layers (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  name TEXT NOT NULL,
  info TEXT NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE TABLE histograms (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT COLLATE "C" NOT NULL,
  step BIGINT NOT NULL,
  wall_time DOUBLE PRECISION NOT NULL,
  low DOUBLE PRECISION NOT NULL,
  high DOUBLE PRECISION NOT NULL,
  nan BIGINT NOT NULL,
  pos_inf BIGINT NOT NULL,
  neg_inf BIGINT NOT NULL,
  counts BYTEA NOT NULL,
  PRIMARY KEY (run_id, key, step)
);
CREATE TABLE run_events (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step BIGINT NOT NULL,
  wall_time DOUBLE PRECISION NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  message TEXT NOT NULL
);
CREATE INDEX run_events_run ON run_events (run_id, id);
)sql";

// PostgreSQL migration 2: SQLite's migration 6.
constexpr const char* kPostgres2 = R"sql(
CREATE TABLE records (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind TEXT COLLATE "C" NOT NULL,
  key TEXT COLLATE "C" NOT NULL,
  step BIGINT NOT NULL,
  wall_time DOUBLE PRECISION,
  payload BYTEA NOT NULL,
  UNIQUE (run_id, kind, key, step)
);
CREATE INDEX records_by_kind ON records (run_id, kind, id);
)sql";

}  // namespace

const std::vector<Migration>& postgres_migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "SQLite's schema 5 in PostgreSQL's types; the artifact folder", kPostgres1},
      {2, "records: one series per capability kind, replacing the per-kind tables", kPostgres2,
       copy_per_kind_tables, kDropPerKindTables},
  };
  return kMigrations;
}

}  // namespace trainscope::store
