-- Builds tests/data/schema_v1.db: a store as trainscope schema version 1 wrote it.
-- Regenerate with: sqlite3 schema_v1.db < make_schema_v1.sql

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

INSERT INTO schema_migrations VALUES (1, 'experiments, runs, params, tags, metrics', 1790000000.0);
INSERT INTO experiments VALUES (1, 'legacy', 1790000000.0);
INSERT INTO runs (id, uuid, experiment_id, name, status, start_time, end_time, heartbeat, command_line, config_text, config_hash)
  VALUES (1, '11111111-2222-4333-8444-555555555555', 1, 'old-run', 'finished', 1790000000.0, 1790000100.0, 1790000100.0, 'trainscope train old.yaml', 'lr: 0.1
', '');
INSERT INTO runs (id, uuid, experiment_id, name, status, start_time, heartbeat)
  VALUES (2, '66666666-7777-4888-8999-aaaaaaaaaaaa', 1, 'crashed-run', 'running', 1790000000.0, 1790000050.0);
INSERT INTO params VALUES (1, 'lr', '0.1');
INSERT INTO tags VALUES (1, 'note', 'from schema v1');
INSERT INTO metric_keys (id, run_id, key, count, last_step, last_value, min_value, max_value) VALUES (1, 1, 'loss', 3, 2, 0.5, 0.5, 2.0);
-- three points (step, wall_time, value) as 24-byte little-endian records
INSERT INTO metric_chunks VALUES (1, 0, 3, 0, 2, X'0000000000000000000000E04EACDA4100000000000000400100000000000000000040E04EACDA41000000000000F03F0200000000000000000080E04EACDA41000000000000E03F');
