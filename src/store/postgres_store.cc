#include "postgres_store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "backends.h"
#include "metric_codec.h"
#include "migrations.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/core/version.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/artifact_store.h"

namespace fs = std::filesystem;

namespace trainscope::store {
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using core::short_uuid;
using pg::get_bytes;
using pg::get_int;
using pg::get_real;
using pg::get_text;
using pg::integer;
using pg::real;
using pg::text;
using pg::Values;

namespace {

constexpr size_t kMaxChunkPoints = 8192;
// Rows per multi-row INSERT (PostgreSQL takes at most 65535 parameters).
constexpr size_t kRowsPerInsert = 1000;
// Advisory lock keys: one writer at a time migrates, or picks a run name.
constexpr int64_t kMigrationLock = 0x7472616e73636f70;  // "transcop"
constexpr int64_t kRunNameLock = 0x7472616e736e616d;    // "transnam"
// The server's clock, in unix seconds.
constexpr const char* kNow = "extract(epoch from clock_timestamp())::float8";

constexpr const char* kRunColumns =
    "r.uuid, e.name, r.name, r.status, r.start_time, r.end_time, r.heartbeat, "
    "p.uuid, r.command_line, r.config_text, r.config_hash, r.host, r.pid, r.pid_start "
    "FROM runs r LEFT JOIN experiments e ON e.id = r.experiment_id "
    "LEFT JOIN runs p ON p.id = r.parent_id ";
constexpr const char* kRunColumnsLight =
    "r.uuid, e.name, r.name, r.status, r.start_time, r.end_time, r.heartbeat, "
    "p.uuid, '', '', r.config_hash, r.host, r.pid, r.pid_start "
    "FROM runs r LEFT JOIN experiments e ON e.id = r.experiment_id "
    "LEFT JOIN runs p ON p.id = r.parent_id ";

RunInfo read_run(const pqxx::row& row) {
  RunInfo r;
  r.uuid = stored_uuid(get_text(row[0]));
  r.experiment = stored_experiment(!row[1].is_null(), get_text(row[1]), r.uuid);
  r.name = get_text(row[2]);
  r.status = stored_run_status(get_text(row[3]), r.uuid);
  r.start_time = get_real(row[4]);
  r.end_time = row[5].is_null() ? 0 : get_real(row[5]);
  r.heartbeat = row[6].is_null() ? 0 : get_real(row[6]);
  r.parent_uuid =
      row[7].is_null() ? "" : stored_uuid(get_text(row[7]), "a run's stored parent UUID");
  r.command_line = get_text(row[8]);
  r.config_text = get_text(row[9]);
  r.config_hash = get_text(row[10]);
  r.host = get_text(row[11]);
  r.pid = stored_pid(get_int(row[12]), r.uuid);
  r.pid_start = get_int(row[13]);
  return r;
}

// "($1, $2, $3), ($4, $5, $6)": `rows` placeholders groups of `width`.
std::string placeholders(size_t rows, size_t width, size_t first = 1) {
  std::string out;
  for (size_t r = 0; r < rows; ++r) {
    out += r ? ", (" : "(";
    for (size_t c = 0; c < width; ++c)
      out += (c ? ", $" : "$") + std::to_string(first + r * width + c);
    out += ")";
  }
  return out;
}

// A PostgreSQL array literal of text values: '{"a","b"}'.
pg::Value text_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : pg::encode_text(item)) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return {out + "}", false};
}

pg::Value int_array(const std::vector<int64_t>& items) {
  std::string out = "{";
  for (int64_t v : items) out += (out.size() > 1 ? "," : "") + std::to_string(v);
  return {out + "}", false};
}

std::map<std::string, std::string> key_values(const pqxx::result& res) {
  std::map<std::string, std::string> out;
  for (const auto& row : res) out.emplace(get_text(row[0]), get_text(row[1]));
  return out;
}

// Payload bytes per multi-row INSERT of records: a batch of large payloads
// is split so that no statement grows without bound.
constexpr size_t kRecordBytesPerInsert = size_t{16} << 20;

// Adds records of `kind` to the run with id `run_id` inside `w`; the first
// of a (kind, key, step) is kept, within the batch too. Returns how many
// were added.
int64_t insert_records_in(pqxx::work& w, int64_t run_id, std::string_view kind,
                          const std::vector<Record>& records) {
  int64_t added = 0;
  for (size_t at = 0; at < records.size();) {
    Values v;
    size_t n = 0, bytes = 0;
    for (; at + n < records.size() && n < kRowsPerInsert; ++n) {
      const Record& r = records[at + n];
      if (n > 0 && bytes + r.payload.size() > kRecordBytesPerInsert) break;
      bytes += r.payload.size();
      v.insert(v.end(), {integer(run_id), text(kind), text(r.key), integer(r.step),
                         real(r.wall_time), pg::bytes(r.payload.data(), r.payload.size())});
    }
    // Identity values follow the VALUES order, so records keep theirs.
    added += pg::exec(w,
                      "INSERT INTO records (run_id, kind, key, step, wall_time, payload) VALUES " +
                          placeholders(n, 6) + " ON CONFLICT (run_id, kind, key, step) DO NOTHING",
                      v)
                 .affected_rows();
    at += n;
  }
  return added;
}

// The migrating transaction as a migration's C++ step sees it.
class PostgresMigrationTxn final : public MigrationTxn {
 public:
  explicit PostgresMigrationTxn(pqxx::work& w) : w_(w) {}
  void query(const std::string& sql, const std::function<void(const Row&)>& row) override {
    for (const auto& r : pg::exec(w_, sql)) row(FieldRow(r));
  }
  void insert_records(int64_t run_id, std::string_view kind,
                      const std::vector<Record>& records) override {
    insert_records_in(w_, run_id, kind, records);
  }

 private:
  class FieldRow final : public Row {
   public:
    explicit FieldRow(const pqxx::row& r) : r_(r) {}
    int64_t integer(int col) const override { return get_int(r_[col]); }
    double real(int col) const override { return get_real(r_[col]); }
    std::string text(int col) const override { return get_text(r_[col]); }
    std::string bytes(int col) const override { return get_bytes(r_[col]); }

   private:
    const pqxx::row& r_;
  };
  pqxx::work& w_;
};

}  // namespace

// --- opening ------------------------------------------------------------------

namespace {

// Version of the store in the connected database: 0 for an empty one.
int read_version(pqxx::work& w, const pg::Location& where) {
  const auto r = pg::exec(
      w,
      "SELECT to_regclass('schema_migrations') IS NOT NULL, to_regclass('settings') IS NOT NULL, "
      "(SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema())");
  const bool has_migrations = r[0][0].as<bool>(), has_settings = r[0][1].as<bool>();
  if (!has_migrations || !has_settings) {
    if (get_int(r[0][2]) > 0)
      fail(ErrorKind::kStore,
           "database '{}' holds other tables but no trainscope store; give an empty database "
           "(createdb NAME) or a schema of its own (CREATE SCHEMA NAME, then "
           "?options=-csearch_path%3DNAME)",
           where.display);
    return 0;
  }
  return static_cast<int>(
      get_int(pg::exec(w, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0]));
}

void migrate(pqxx::work& w, const pg::Location& where) {
  pg::exec(w, "SELECT pg_advisory_xact_lock($1)", {integer(kMigrationLock)});
  const int version = read_version(w, where);  // another host may have migrated meanwhile
  for (const auto& m : postgres_migrations()) {
    if (m.version <= version) continue;
    core::log_debug("store {}: migrating schema {} -> {} ({})", where.display, m.version - 1,
                    m.version, m.description);
    w.exec(m.sql);
    if (m.step) {
      PostgresMigrationTxn step(w);
      m.step(step);
    }
    if (m.sql_after) w.exec(m.sql_after);
    pg::exec(w,
             std::string("INSERT INTO schema_migrations (version, description, applied_time) "
                         "VALUES ($1, $2, ") +
                 kNow + ")",
             {integer(m.version), text(m.description)});
  }
}

fs::path default_artifact_root(const pg::Location& where) {
  const char* data = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = data && *data   ? fs::path(data)
                  : home && *home ? fs::path(home) / ".local" / "share"
                                  : fs::temp_directory_path();
  std::string name;
  for (char c : where.display.substr(where.display.find("//") + 2))
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return base / "trainscope" / "artifacts" / name.substr(0, 120);
}

// Where this store's artifact files are (see postgres_store.h). A store
// that has none recorded yet records the folder chosen now, so that every
// host opening it later finds the same one.
fs::path artifact_root(pqxx::work& w, const pg::Location& where, bool read_only) {
  const auto recorded = pg::exec(w, "SELECT value FROM settings WHERE key = 'artifact_root'");
  fs::path root;
  const char* env = std::getenv("TRAINSCOPE_ARTIFACTS");
  if (!where.artifacts.empty()) {
    root = fs::absolute(where.artifacts);
  } else if (env && *env) {
    root = fs::absolute(env);
  } else if (!recorded.empty()) {
    return get_text(recorded[0][0]);
  } else {
    root = default_artifact_root(where);
    core::log_info(
        "store {}: artifact files go to {}; for a store shared by several machines give a "
        "folder they all reach (?artifacts=FOLDER in the store URI)",
        where.display, root.string());
  }
  if (recorded.empty() && !read_only)
    pg::exec(w,
             "INSERT INTO settings (key, value) VALUES ('artifact_root', $1) "
             "ON CONFLICT (key) DO NOTHING",
             {text(root.string())});
  return root;
}

}  // namespace

std::unique_ptr<Store> open_postgres(std::string_view scheme, std::string_view location,
                                     const StoreOptions& options) {
  pg::Session session(pg::parse_location(scheme, location), options.read_only,
                      options.busy_timeout_seconds);
  const pg::Location where = session.location();
  const int latest = postgres_migrations().back().version;
  fs::path root;
  session.transact([&](pqxx::work& w) {
    const int version = read_version(w, where);
    if (version > latest)
      fail(ErrorKind::kStore,
           "store '{}' has schema version {}, newer than this trainscope ({}, schema {}); "
           "upgrade trainscope, the store was not modified",
           where.display, version, core::version(), latest);
    if (options.read_only && version == 0)
      fail(ErrorKind::kNotFound,
           "store '{}' holds no trainscope store yet; record a run first or open another store",
           where.display);
    if (options.read_only && version < latest)
      fail(ErrorKind::kStore,
           "store '{}' has schema version {} and needs migrating to {}; open it once without "
           "read-only mode",
           where.display, version, latest);
    if (version < latest) migrate(w, where);
    root = artifact_root(w, where, options.read_only);
  });
  return std::make_unique<PostgresStore>(std::move(session), root, options);
}

PostgresStore::PostgresStore(pg::Session session, const fs::path& artifact_root,
                             const StoreOptions& options)
    : Store(make_folder_artifact_store(artifact_root), options), session_(std::move(session)) {}

std::string PostgresStore::describe() const { return session_.location().display; }

int PostgresStore::latest_schema_version() const { return postgres_migrations().back().version; }

void PostgresStore::transact(const std::function<void(pqxx::work&)>& body) {
  std::lock_guard lock(mu_);
  session_.transact(body);
}

int PostgresStore::schema_version() {
  int v = 0;
  transact([&](pqxx::work& w) { v = read_version(w, session_.location()); });
  return v;
}

double PostgresStore::now() {
  double t = 0;
  transact([&](pqxx::work& w) { t = get_real(pg::exec(w, std::string("SELECT ") + kNow)[0][0]); });
  return t;
}

int64_t PostgresStore::run_id(pqxx::work& w, std::string_view uuid) {
  const auto r = pg::exec(w, "SELECT id FROM runs WHERE uuid = $1", {text(uuid)});
  if (r.empty())
    fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid), describe());
  return get_int(r[0][0]);
}

void PostgresStore::check_lease_in(pqxx::work& w, std::string_view uuid) {
  if (!lease(uuid)) return;
  const auto r = pg::exec(
      w, "SELECT status, host, pid, pid_start FROM runs WHERE uuid = $1 FOR SHARE", {text(uuid)});
  if (r.empty()) return;  // deleted: the write itself reports it
  check_lease(uuid, stored_run_status(get_text(r[0][0]), uuid),
              {get_text(r[0][1]), get_int(r[0][2]), get_int(r[0][3])});
}

// --- runs -------------------------------------------------------------------

RunInfo PostgresStore::create_run(const NewRun& run) {
  RunInfo out;
  transact([&](pqxx::work& w) {
    if (run.unique_name) pg::exec(w, "SELECT pg_advisory_xact_lock($1)", {integer(kRunNameLock)});
    pg::exec(w,
             std::string("INSERT INTO experiments (name, created_time) VALUES ($1, ") + kNow +
                 ") ON CONFLICT (name) DO NOTHING",
             {text(run.experiment)});
    std::string name = run.name;
    if (run.unique_name && !name.empty()) {
      std::vector<std::string> taken;
      for (const auto& row :
           pg::exec(w, "SELECT name FROM runs WHERE name = $1 OR starts_with(name, $1 || '-')",
                    {text(name)}))
        taken.push_back(get_text(row[0]));
      name = next_free_name(name, taken);
    }
    const pg::Value parent =
        run.parent_uuid.empty() ? pg::Value{{}, true} : integer(run_id(w, run.parent_uuid));
    const std::string uuid = core::new_uuid();
    const WriterIdentity me = writer();
    pg::exec(w,
             std::string("INSERT INTO runs (uuid, experiment_id, name, status, start_time, "
                         "heartbeat, parent_id, command_line, config_text, config_hash, host, "
                         "pid, pid_start) SELECT $1, e.id, $2, $3, t.now, t.now, $4, $5, $6, $7, "
                         "$8, $9, $10 FROM experiments e, (SELECT ") +
                 kNow + " AS now) t WHERE e.name = $11",
             {text(uuid), text(name), text(to_string(run.status)), parent, text(run.command_line),
              text(run.config_text),
              text(run.config_text.empty() ? std::string() : core::sha256_hex(run.config_text)),
              text(me.host), integer(me.pid), integer(me.pid_start), text(run.experiment)});
    out = read_run(
        pg::exec(w, std::string("SELECT ") + kRunColumns + "WHERE r.uuid = $1", {text(uuid)})[0]);
  });
  if (run.status == RunStatus::kRunning) hold_lease(out.uuid);
  return out;
}

void PostgresStore::import_run(const RunInfo& run) {
  transact([&](pqxx::work& w) {
    if (!pg::exec(w, "SELECT 1 FROM runs WHERE uuid = $1", {text(run.uuid)}).empty())
      fail(ErrorKind::kConflict, "run {} is already in {}", short_uuid(run.uuid), describe());
    pg::exec(w,
             "INSERT INTO experiments (name, created_time) VALUES ($1, $2) "
             "ON CONFLICT (name) DO NOTHING",
             {text(run.experiment), real(run.start_time)});
    const pg::Value parent =
        run.parent_uuid.empty() ? pg::Value{{}, true} : integer(run_id(w, run.parent_uuid));
    pg::exec(w,
             "INSERT INTO runs (uuid, experiment_id, name, status, start_time, end_time, "
             "heartbeat, parent_id, command_line, config_text, config_hash, host, pid, pid_start) "
             "SELECT $1, id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 "
             "FROM experiments WHERE name = $14",
             {text(run.uuid), text(run.name), text(to_string(run.status)), real(run.start_time),
              run.end_time > 0 ? real(run.end_time) : pg::Value{{}, true}, real(run.heartbeat),
              parent, text(run.command_line), text(run.config_text), text(run.config_hash),
              text(run.host), integer(run.pid), integer(run.pid_start), text(run.experiment)});
  });
}

std::optional<RunInfo> PostgresStore::find_run(std::string_view uuid) {
  std::optional<RunInfo> out;
  transact([&](pqxx::work& w) {
    const auto r =
        pg::exec(w, std::string("SELECT ") + kRunColumns + "WHERE r.uuid = $1", {text(uuid)});
    if (!r.empty()) out = read_run(r[0]);
  });
  return out;
}

std::vector<RunInfo> PostgresStore::list_runs(const RunFilter& filter) {
  std::string sql = std::string("SELECT ") + kRunColumnsLight + "WHERE true ";
  Values params;
  auto add = [&](const char* condition, pg::Value v) {
    params.push_back(std::move(v));
    sql += fmt::format(fmt::runtime(condition), params.size());
  };
  if (!filter.experiment.empty()) add("AND e.name = ${} ", text(filter.experiment));
  if (filter.status) add("AND r.status = ${} ", text(to_string(*filter.status)));
  if (!filter.parent_uuid.empty())
    add("AND p.uuid = ${} AND r.id <> p.id ", text(filter.parent_uuid));
  if (!filter.name.empty()) add("AND r.name = ${} ", text(filter.name));
  if (!filter.uuid_prefix.empty()) add("AND starts_with(r.uuid, ${}) ", text(filter.uuid_prefix));
  sql += "ORDER BY r.start_time DESC, r.id DESC";
  if (filter.limit > 0) add(" LIMIT ${}", integer(filter.limit));
  std::vector<RunInfo> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& row : pg::exec(w, sql, params)) out.push_back(read_run(row));
  });
  return out;
}

void PostgresStore::write_status(std::string_view uuid, RunStatus status) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    const auto r =
        pg::exec(w,
                 std::string("UPDATE runs SET status = $1, heartbeat = t.now, end_time "
                             "= CASE WHEN $2 THEN t.now END FROM (SELECT ") +
                     kNow + " AS now) t WHERE uuid = $3",
                 {text(to_string(status)), {is_terminal(status) ? "true" : "false"}, text(uuid)});
    if (r.affected_rows() == 0)
      fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid),
           describe());
  });
}

void PostgresStore::claim_run(std::string_view uuid) {
  const WriterIdentity me = writer();
  std::optional<WriterIdentity> holder;
  double holder_heartbeat = 0;
  transact([&](pqxx::work& w) {
    holder.reset();
    // The row lock the UPDATE takes orders two claims: the second finds
    // the run running and is refused.
    const auto r = pg::exec(w,
                            std::string("UPDATE runs SET status = 'running', heartbeat = ") + kNow +
                                ", end_time = NULL, host = $1, pid = $2, pid_start = $3 "
                                "WHERE uuid = $4 AND status <> 'running'",
                            {text(me.host), integer(me.pid), integer(me.pid_start), text(uuid)});
    if (r.affected_rows() > 0) return;
    const auto cur = pg::exec(w,
                              std::string("SELECT host, pid, pid_start, heartbeat FROM runs "
                                          "WHERE uuid = $1"),
                              {text(uuid)});
    if (cur.empty())
      fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid),
           describe());
    holder = WriterIdentity{get_text(cur[0][0]), get_int(cur[0][1]), get_int(cur[0][2])};
    holder_heartbeat = get_real(cur[0][3]);
  });
  if (holder) fail_claim(uuid, *holder, holder_heartbeat);
}

void PostgresStore::heartbeat(std::string_view uuid) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    pg::exec(w, std::string("UPDATE runs SET heartbeat = ") + kNow + " WHERE uuid = $1",
             {text(uuid)});
  });
}

void PostgresStore::set_config(std::string_view uuid, std::string_view config_text) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    const std::string text_value(config_text);
    const auto r = pg::exec(
        w, "UPDATE runs SET config_text = $1, config_hash = $2 WHERE uuid = $3",
        {text(text_value), text(text_value.empty() ? std::string() : core::sha256_hex(text_value)),
         text(uuid)});
    if (r.affected_rows() == 0)
      fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", core::escape_for_display(uuid),
           describe());
  });
}

bool PostgresStore::mark_killed(const RunInfo& judged) {
  bool changed = false;
  transact([&](pqxx::work& w) {
    // Only a run still running as it was judged: one that just finished,
    // beat again or was claimed by another writer is left as it is.
    // It ended at its last heartbeat, or now if that is later (a clock
    // ahead); an end before its start is no end: unknown (NULL).
    const std::string end = std::string("LEAST(COALESCE(heartbeat, ") + kNow + "), " + kNow + ")";
    changed = pg::exec(w,
                       "UPDATE runs SET status = 'killed', end_time = CASE WHEN " + end +
                           " >= start_time THEN " + end +
                           " END WHERE uuid = $1 AND status = 'running' AND host = $2 AND pid = $3 "
                           "AND COALESCE(pid_start, 0) = $4 AND COALESCE(heartbeat, 0) <= $5",
                       {text(judged.uuid), text(judged.host), integer(judged.pid),
                        integer(judged.pid_start), real(judged.heartbeat)})
                  .affected_rows() > 0;
  });
  return changed;
}

void PostgresStore::erase_run(std::string_view uuid) {
  int64_t id = 0;
  transact([&](pqxx::work& w) {
    const auto r = pg::exec(w, "DELETE FROM runs WHERE uuid = $1 RETURNING id", {text(uuid)});
    if (r.empty())
      fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid),
           describe());
    id = get_int(r[0][0]);
  });
  std::lock_guard lock(mu_);
  std::erase_if(key_cache_, [id](const auto& kv) { return kv.first.first == id; });
}

std::vector<std::string> PostgresStore::list_experiments() {
  std::vector<std::string> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& row : pg::exec(w, "SELECT name FROM experiments ORDER BY name"))
      out.push_back(get_text(row[0]));
  });
  return out;
}

// --- params and tags ----------------------------------------------------------

// Inserts the params not yet recorded, then checks that every one holds the
// value given: params never change.
void PostgresStore::check_params(pqxx::work& w, int64_t run_id, std::string_view uuid,
                                 const std::map<std::string, std::string>& params) {
  std::vector<std::pair<std::string, std::string>> rows(params.begin(), params.end());
  for (size_t at = 0; at < rows.size(); at += kRowsPerInsert) {
    const size_t n = std::min(kRowsPerInsert, rows.size() - at);
    Values v;
    for (size_t i = at; i < at + n; ++i) {
      v.push_back(integer(run_id));
      v.push_back(text(rows[i].first));
      v.push_back(text(rows[i].second));
    }
    pg::exec(w,
             "INSERT INTO params (run_id, key, value) VALUES " + placeholders(n, 3) +
                 " ON CONFLICT (run_id, key) DO NOTHING",
             v);
  }
  const auto stored =
      key_values(pg::exec(w, "SELECT key, value FROM params WHERE run_id = $1", {integer(run_id)}));
  for (const auto& [key, value] : params) {
    const std::string& old = stored.at(key);
    if (!same_param_value(old, value))
      fail(ErrorKind::kConflict,
           "param '{}' of run {} is already '{}'; params are immutable (got '{}'); use a tag for "
           "values that change",
           escape_for_display(key), short_uuid(uuid), escape_for_display(old),
           escape_for_display(value));
  }
}

void PostgresStore::set_param(std::string_view uuid, std::string_view key, std::string_view value) {
  set_params(uuid, {{std::string(key), std::string(value)}});
}

void PostgresStore::set_params(std::string_view uuid,
                               const std::map<std::string, std::string>& params) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    check_params(w, run_id(w, uuid), uuid, params);
  });
}

std::map<std::string, std::string> PostgresStore::params(std::string_view uuid) {
  std::map<std::string, std::string> out;
  transact([&](pqxx::work& w) {
    out = key_values(pg::exec(
        w, "SELECT key, value FROM params WHERE run_id = (SELECT id FROM runs WHERE uuid = $1)",
        {text(uuid)}));
  });
  return out;
}

std::map<std::string, RunFields> PostgresStore::run_fields(const std::vector<std::string>& uuids,
                                                           bool params, bool tags, bool metrics) {
  std::map<std::string, RunFields> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& u : uuids) out[u];
    const pg::Value wanted = text_array(uuids);
    auto pairs = [&](const char* table, auto member) {
      for (const auto& row : pg::exec(w,
                                      std::string("SELECT r.uuid, t.key, t.value FROM ") + table +
                                          " t JOIN runs r ON r.id = t.run_id "
                                          "WHERE r.uuid = ANY($1::text[])",
                                      {wanted}))
        (out[get_text(row[0])].*member).emplace(get_text(row[1]), get_text(row[2]));
    };
    if (params) pairs("params", &RunFields::params);
    if (tags) pairs("tags", &RunFields::tags);
    if (!metrics) return;
    for (const auto& row : pg::exec(w,
                                    "SELECT r.uuid, k.key, k.count, COALESCE(k.last_step, -1), "
                                    "k.last_value, k.min_value, k.max_value FROM metric_keys k "
                                    "JOIN runs r ON "
                                    "r.id = k.run_id WHERE r.uuid = ANY($1::text[]) AND k.count "
                                    "> 0 ORDER BY k.key",
                                    {wanted})) {
      auto& summaries = out[get_text(row[0])].metrics;
      summaries.push_back({get_text(row[1]), get_int(row[2]), get_int(row[3]), get_real(row[4]),
                           get_real(row[5]), get_real(row[6])});
      codec::check_summary(summaries.back(), get_text(row[0]));
    }
  });
  return out;
}

void PostgresStore::set_tag(std::string_view uuid, std::string_view key, std::string_view value) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    pg::exec(w,
             "INSERT INTO tags (run_id, key, value) VALUES ($1, $2, $3) "
             "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
             {integer(run_id(w, uuid)), text(key), text(value)});
  });
}

void PostgresStore::delete_tag(std::string_view uuid, std::string_view key) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    pg::exec(w, "DELETE FROM tags WHERE run_id = $1 AND key = $2",
             {integer(run_id(w, uuid)), text(key)});
  });
}

std::map<std::string, std::string> PostgresStore::tags(std::string_view uuid) {
  std::map<std::string, std::string> out;
  transact([&](pqxx::work& w) {
    out = key_values(pg::exec(
        w, "SELECT key, value FROM tags WHERE run_id = (SELECT id FROM runs WHERE uuid = $1)",
        {text(uuid)}));
  });
  return out;
}

// --- metrics ------------------------------------------------------------------

std::map<std::string, int64_t> PostgresStore::key_ids(pqxx::work& w, int64_t run_id,
                                                      const std::vector<MetricSeries>& batch) {
  std::map<std::string, int64_t> ids;
  std::vector<std::string> missing;
  for (const auto& s : batch) {
    if (s.points.empty() || ids.count(s.key)) continue;
    if (auto it = key_cache_.find({run_id, s.key}); it != key_cache_.end()) {
      ids[s.key] = it->second;
    } else if (std::find(missing.begin(), missing.end(), s.key) == missing.end()) {
      missing.push_back(s.key);
    }
  }
  if (missing.empty()) return ids;
  Values v;
  for (const auto& key : missing) {
    v.push_back(integer(run_id));
    v.push_back(text(key));
  }
  pg::exec(w,
           "INSERT INTO metric_keys (run_id, key) VALUES " + placeholders(missing.size(), 2) +
               " ON CONFLICT (run_id, key) DO NOTHING",
           v);
  for (const auto& row : pg::exec(w,
                                  "SELECT id, key FROM metric_keys WHERE run_id = $1 AND "
                                  "key = ANY($2::text[])",
                                  {integer(run_id), text_array(missing)}))
    ids[get_text(row[1])] = get_int(row[0]);
  return ids;
}

namespace {

// A key's summary and next chunk number while a batch is appended.
struct KeyState {
  int64_t count = 0, seq = 0, last_step = 0;
  double last_value = 0, min = std::nan(""), max = std::nan("");
};

struct ChunkRow {
  int64_t key_id, seq, n, first_step, last_step;
  std::string points;
};

void insert_chunks(pqxx::work& w, const std::vector<ChunkRow>& rows) {
  for (size_t at = 0; at < rows.size(); at += kRowsPerInsert) {
    const size_t n = std::min(kRowsPerInsert, rows.size() - at);
    Values v;
    for (size_t i = at; i < at + n; ++i) {
      const ChunkRow& c = rows[i];
      for (int64_t x : {c.key_id, c.seq, c.n, c.first_step, c.last_step}) v.push_back(integer(x));
      v.push_back(pg::bytes(c.points.data(), c.points.size()));
    }
    pg::exec(w,
             "INSERT INTO metric_chunks (key_id, seq, n, first_step, last_step, points) VALUES " +
                 placeholders(n, 6),
             v);
  }
}

void update_summaries(pqxx::work& w, const std::map<int64_t, KeyState>& keys) {
  Values v;
  for (const auto& [id, k] : keys) {
    v.insert(v.end(),
             {integer(id), integer(k.count), integer(k.last_step), pg::real_or_null(k.last_value),
              pg::real_or_null(k.min), pg::real_or_null(k.max)});
  }
  pg::exec(w,
           "UPDATE metric_keys k SET count = v.count::bigint, last_step = v.last_step::bigint, "
           "last_value = v.last_value::float8, min_value = v.mn::float8, max_value = "
           "v.mx::float8 FROM (VALUES " +
               placeholders(keys.size(), 6) +
               ") AS v(id, count, last_step, last_value, mn, mx) WHERE k.id = v.id::bigint",
           v);
}

}  // namespace

// One transaction, a handful of statements whatever the batch holds: the
// keys' rows are locked in id order (so concurrent writers cannot
// deadlock), then every chunk goes in one multi-row INSERT and every
// summary in one UPDATE.
void PostgresStore::append_metrics(std::string_view uuid, const std::vector<MetricSeries>& batch) {
  int64_t id = 0;
  std::map<std::string, int64_t> ids;
  try {
    transact([&](pqxx::work& w) {
      id = run_id(w, uuid);
      check_lease_in(w, uuid);
      ids = key_ids(w, id, batch);
      if (ids.empty()) return;
      std::vector<int64_t> wanted;
      wanted.reserve(ids.size());
      for (const auto& [key, key_id] : ids) wanted.push_back(key_id);
      std::map<int64_t, KeyState> keys;
      for (const auto& row : pg::exec(w,
                                      "SELECT k.id, k.count, k.min_value, k.max_value, "
                                      "(SELECT COALESCE(MAX(c.seq) + 1, 0) FROM metric_chunks c "
                                      "WHERE c.key_id = k.id) FROM metric_keys k WHERE k.id = "
                                      "ANY($1::bigint[]) ORDER BY k.id FOR UPDATE",
                                      {int_array(wanted)}))
        keys[get_int(row[0])] = {get_int(row[1]),  get_int(row[4]), 0, 0,
                                 get_real(row[2]), get_real(row[3])};
      if (keys.size() != ids.size())
        fail(ErrorKind::kNotFound, "run {} was deleted from {} while its metrics were written",
             short_uuid(uuid), describe());
      std::vector<ChunkRow> chunks;
      for (const auto& series : batch) {
        if (series.points.empty()) continue;
        const int64_t key_id = ids.at(series.key);
        KeyState& k = keys.at(key_id);
        const auto& pts = series.points;
        for (const auto& p : pts) {
          if (!std::isfinite(p.value)) continue;
          if (std::isnan(k.min) || p.value < k.min) k.min = p.value;
          if (std::isnan(k.max) || p.value > k.max) k.max = p.value;
        }
        for (size_t off = 0; off < pts.size(); off += kMaxChunkPoints) {
          const size_t n = std::min(kMaxChunkPoints, pts.size() - off);
          ChunkRow c{key_id, k.seq++, static_cast<int64_t>(n), pts[off].step, pts[off + n - 1].step,
                     {}};
          codec::encode(pts.data() + off, n, c.points);
          chunks.push_back(std::move(c));
        }
        k.count += static_cast<int64_t>(pts.size());
        k.last_step = pts.back().step;
        k.last_value = pts.back().value;
      }
      insert_chunks(w, chunks);
      update_summaries(w, keys);
    });
  } catch (...) {
    std::lock_guard lock(mu_);
    std::erase_if(key_cache_, [id](const auto& kv) { return kv.first.first == id; });
    throw;
  }
  std::lock_guard lock(mu_);
  for (const auto& [key, key_id] : ids) key_cache_[{id, key}] = key_id;
}

// The chunks of one run's key ($1 the UUID, $2 the key).
constexpr const char* kChunksOfKey =
    "FROM metric_chunks c JOIN metric_keys k ON k.id = c.key_id "
    "JOIN runs r ON r.id = k.run_id WHERE r.uuid = $1 AND k.key = $2";

std::vector<MetricPoint> PostgresStore::metric(std::string_view uuid, std::string_view key) {
  return metric_from(uuid, key, 0);
}

std::vector<MetricPoint> PostgresStore::metric_from(std::string_view uuid, std::string_view key,
                                                    int64_t first) {
  std::vector<MetricPoint> out;
  first = std::max<int64_t>(first, 0);
  transact([&](pqxx::work& w) {
    out.clear();
    // Chunk sizes first (no points read) to find the chunk holding point
    // `first`; then only that chunk and the later ones.
    int64_t before = 0, from_seq = -1, total = 0, last_step = -1, to_seq = -1, count = 0;
    double last_value = std::nan("");
    for (const auto& row : pg::exec(w,
                                    std::string("SELECT c.seq, c.n, COALESCE(k.last_step, -1), "
                                                "k.last_value, k.count ") +
                                        kChunksOfKey + " ORDER BY c.seq",
                                    {text(uuid), text(key)})) {
      last_step = get_int(row[2]);
      last_value = get_real(row[3]);
      count = get_int(row[4]);
      to_seq = get_int(row[0]);
      const int64_t n = get_int(row[1]);
      if (from_seq < 0 && before + n > first) from_seq = get_int(row[0]);
      if (from_seq < 0) before += n;
      total += n;
    }
    codec::check_total(total, count, key, uuid);  // one statement: one snapshot
    if (from_seq < 0) return;
    // A damaged store may claim any count: reserve what is plausible only.
    out.reserve(static_cast<size_t>(std::min<int64_t>(total - before, 1 << 24)));
    // Up to the last chunk the first query saw: each statement reads the
    // store as it is then, and a writer may have appended since.
    for (const auto& row : pg::exec(w,
                                    std::string("SELECT c.points ") + kChunksOfKey +
                                        " AND c.seq >= $3 AND c.seq <= $4 ORDER BY c.seq",
                                    {text(uuid), text(key), integer(from_seq), integer(to_seq)}))
      codec::decode(get_bytes(row[0]), out);
    codec::check_count(total - before, out.size(), key, uuid);
    codec::check_last(out, last_step, last_value, key, uuid);
    codec::check_own(out, key, uuid);
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(
                                             std::min<int64_t>(first - before, std::ssize(out))));
  });
  return out;
}

// Chunks a scan_metric reads in one query: at most 64 x 8192 points.
constexpr int64_t kScanChunks = 64;

void PostgresStore::scan_metric(std::string_view uuid, std::string_view key, int64_t first,
                                const std::function<bool(const std::vector<MetricPoint>&)>& each) {
  first = std::max<int64_t>(first, 0);
  // The chunk holding point `first`, found in the server (one row back).
  int64_t next_seq = -1, before = 0;
  transact([&](pqxx::work& w) {
    next_seq = -1;
    const auto r =
        pg::exec(w,
                 std::string("SELECT s.seq, s.n_before, s.total, s.count FROM (SELECT c.seq, "
                             "c.n, sum(c.n) OVER (ORDER BY c.seq) - c.n AS n_before, sum(c.n) "
                             "OVER () AS total, k.count ") +
                     kChunksOfKey + ") s WHERE s.n_before + s.n > $3 ORDER BY s.seq LIMIT 1",
                 {text(uuid), text(key), integer(first)});
    if (r.empty()) return;
    codec::check_total(get_int(r[0][2]), get_int(r[0][3]), key, uuid);
    next_seq = get_int(r[0][0]);
    before = get_int(r[0][1]);
  });
  int64_t skip = first - before;  // of the first chunk's points
  std::vector<std::string> blobs;
  std::vector<MetricPoint> chunk;
  while (next_seq >= 0) {
    int64_t last = -1, last_step = -1;
    double last_value = std::nan("");  // the row's, as the same query reads it
    transact([&](pqxx::work& w) {
      blobs.clear();
      for (const auto& row :
           pg::exec(w,
                    std::string("SELECT c.seq, c.points, COALESCE(k.last_step, -1), "
                                "k.last_value ") +
                        kChunksOfKey + " AND c.seq >= $3 ORDER BY c.seq LIMIT $4",
                    {text(uuid), text(key), integer(next_seq), integer(kScanChunks)})) {
        last = get_int(row[0]);
        blobs.push_back(get_bytes(row[1]));
        last_step = get_int(row[2]);
        last_value = get_real(row[3]);
      }
    });
    // Fewer than asked for: those were the last.
    next_seq = std::ssize(blobs) < kScanChunks ? -1 : last + 1;
    for (const auto& blob : blobs) {
      chunk.clear();
      codec::decode(blob, chunk);
      if (next_seq < 0 && &blob == &blobs.back())
        codec::check_last(chunk, last_step, last_value, key, uuid);
      codec::check_own(chunk, key, uuid);
      const int64_t k = std::min<int64_t>(skip, std::ssize(chunk));
      chunk.erase(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(k));
      skip -= k;
      if (!chunk.empty() && !each(chunk)) return;
    }
  }
}

std::vector<MetricSummary> PostgresStore::metric_summaries(std::string_view uuid) {
  std::vector<MetricSummary> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& row : pg::exec(w,
                                    "SELECT k.key, k.count, COALESCE(k.last_step, -1), "
                                    "k.last_value, "
                                    "k.min_value, k.max_value FROM metric_keys k JOIN runs r ON "
                                    "r.id = k.run_id WHERE r.uuid = $1 AND k.count <> 0 ORDER BY "
                                    "k.key",
                                    {text(uuid)})) {
      out.push_back({get_text(row[0]), get_int(row[1]), get_int(row[2]), get_real(row[3]),
                     get_real(row[4]), get_real(row[5])});
      codec::check_summary(out.back(), uuid);
    }
  });
  return out;
}

// --- environment and fingerprints ---------------------------------------------------

void PostgresStore::set_environment(std::string_view uuid,
                                    const std::map<std::string, std::string>& entries) {
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    const int64_t id = run_id(w, uuid);
    std::vector<std::pair<std::string, std::string>> rows(entries.begin(), entries.end());
    for (size_t at = 0; at < rows.size(); at += kRowsPerInsert) {
      const size_t n = std::min(kRowsPerInsert, rows.size() - at);
      Values v;
      for (size_t i = at; i < at + n; ++i)
        v.insert(v.end(), {integer(id), text(rows[i].first), text(rows[i].second)});
      pg::exec(w,
               "INSERT INTO environment (run_id, key, value) VALUES " + placeholders(n, 3) +
                   " ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
               v);
    }
  });
}

std::map<std::string, std::string> PostgresStore::environment(std::string_view uuid) {
  std::map<std::string, std::string> out;
  transact([&](pqxx::work& w) {
    out = key_values(pg::exec(w,
                              "SELECT key, value FROM environment WHERE run_id = (SELECT id FROM "
                              "runs WHERE uuid = $1)",
                              {text(uuid)}));
  });
  return out;
}

// --- records ------------------------------------------------------------------

int64_t PostgresStore::insert_records(std::string_view uuid, std::string_view kind,
                                      const std::vector<Record>& records) {
  int64_t added = 0;
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    added = insert_records_in(w, run_id(w, uuid), kind, records);
  });
  return added;
}

std::vector<Record> PostgresStore::read_records(std::string_view uuid, std::string_view kind,
                                                std::optional<std::string_view> key) {
  std::vector<Record> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& row :
         pg::exec(w,
                  "SELECT key, step, wall_time, payload FROM records WHERE run_id = (SELECT id "
                  "FROM runs WHERE uuid = $1) AND kind = $2 AND ($3 OR key = $4) ORDER BY id",
                  {text(uuid), text(kind), {key ? "false" : "true"}, text(key.value_or(""))})) {
      const double wall = get_real(row[2]);
      out.push_back(
          {get_text(row[0]), get_int(row[1]), std::isnan(wall) ? 0.0 : wall, get_bytes(row[3])});
    }
  });
  return out;
}

std::vector<Record> PostgresStore::read_record_sample(std::string_view uuid, std::string_view kind,
                                                      size_t most, int64_t& count) {
  std::vector<Record> out;
  transact([&](pqxx::work& w) {
    out.clear();
    count = 0;
    // Numbered and counted in the server, in one statement (one snapshot):
    // only the sample's payloads come over. Every k-th from the first, k =
    // ceil(total / most), 1 when there are no more than `most`.
    for (const auto& row : pg::exec(
             w,
             "SELECT r.key, r.step, r.wall_time, r.payload, s.total FROM records r JOIN (SELECT "
             "id, row_number() OVER (ORDER BY id) AS n, count(*) OVER () AS total FROM records "
             "WHERE run_id = (SELECT id FROM runs WHERE uuid = $1) AND kind = $2) s ON r.id = "
             "s.id WHERE (s.n - 1) % ((s.total + $3 - 1) / $3) = 0 ORDER BY r.id",
             {text(uuid), text(kind),
              integer(static_cast<int64_t>(std::min<size_t>(most, size_t{1} << 40)))})) {
      const double wall = get_real(row[2]);
      out.push_back(
          {get_text(row[0]), get_int(row[1]), std::isnan(wall) ? 0.0 : wall, get_bytes(row[3])});
      count = get_int(row[4]);
    }
  });
  return out;
}

std::map<std::string, int64_t> PostgresStore::record_kinds(std::string_view uuid) {
  std::map<std::string, int64_t> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& row : pg::exec(w,
                                    "SELECT kind, count(*) FROM records WHERE run_id = (SELECT "
                                    "id FROM runs WHERE uuid = $1) GROUP BY kind",
                                    {text(uuid)}))
      out.emplace(get_text(row[0]), get_int(row[1]));
  });
  return out;
}

// --- artifacts ------------------------------------------------------------------

namespace {
ArtifactInfo read_artifact(const pqxx::row& row, std::string_view uuid) {
  return stored_artifact(
      {get_text(row[0]), get_text(row[1]), get_text(row[2]), get_int(row[3]), get_real(row[4]), {}},
      uuid);
}
}  // namespace

std::optional<ArtifactInfo> PostgresStore::find_artifact(std::string_view uuid,
                                                         std::string_view name) {
  std::optional<ArtifactInfo> out;
  transact([&](pqxx::work& w) {
    const auto r = pg::exec(w,
                            "SELECT a.name, a.kind, a.sha256, a.size, a.created_time FROM "
                            "artifacts a JOIN runs r ON r.id = a.run_id WHERE r.uuid = $1 AND "
                            "a.name = $2",
                            {text(uuid), text(name)});
    out.reset();
    if (!r.empty()) out = read_artifact(r[0], uuid);
  });
  return out;
}

ArtifactInfo PostgresStore::insert_artifact(std::string_view uuid, const ArtifactInfo& info) {
  ArtifactInfo out;
  transact([&](pqxx::work& w) {
    check_lease_in(w, uuid);
    const int64_t id = run_id(w, uuid);
    pg::exec(w,
             "INSERT INTO artifacts (run_id, name, kind, sha256, size, created_time) VALUES ($1, "
             "$2, $3, $4, $5, $6) ON CONFLICT (run_id, name) DO NOTHING",
             {integer(id), text(info.name), text(info.kind), text(info.sha256), integer(info.size),
              real(info.created_time)});
    out = read_artifact(pg::exec(w,
                                 "SELECT name, kind, sha256, size, created_time FROM artifacts "
                                 "WHERE run_id = $1 AND name = $2",
                                 {integer(id), text(info.name)})[0],
                        uuid);
  });
  return out;
}

std::vector<ArtifactInfo> PostgresStore::artifact_rows(std::string_view uuid) {
  std::vector<ArtifactInfo> out;
  transact([&](pqxx::work& w) {
    out.clear();
    for (const auto& row : pg::exec(w,
                                    "SELECT a.name, a.kind, a.sha256, a.size, a.created_time FROM "
                                    "artifacts a JOIN runs r ON r.id = a.run_id WHERE r.uuid = $1 "
                                    "ORDER BY a.name",
                                    {text(uuid)}))
      out.push_back(read_artifact(row, uuid));
  });
  return out;
}

}  // namespace trainscope::store
