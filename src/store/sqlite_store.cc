#include "sqlite_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

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
using core::Error;
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using core::log_debug;
using core::log_info;
using core::log_warn;
using core::new_uuid;
using core::sha256_file;
using core::sha256_hex;
using core::short_uuid;
using core::unix_now;
using core::version;

namespace {

constexpr size_t kMaxChunkPoints = 8192;

// Columns read into a RunInfo, in this order, by read_run().
constexpr const char* kRunColumns =
    "r.uuid, e.name, r.name, r.status, r.start_time, r.end_time, r.heartbeat, "
    "p.uuid, r.command_line, r.config_text, r.config_hash, r.host, r.pid, r.pid_start "
    "FROM runs r LEFT JOIN experiments e ON e.id = r.experiment_id "
    "LEFT JOIN runs p ON p.id = r.parent_id ";

// Same columns without the potentially large command line and config.
constexpr const char* kRunColumnsLight =
    "r.uuid, e.name, r.name, r.status, r.start_time, r.end_time, r.heartbeat, "
    "p.uuid, '', '', r.config_hash, r.host, r.pid, r.pid_start "
    "FROM runs r LEFT JOIN experiments e ON e.id = r.experiment_id "
    "LEFT JOIN runs p ON p.id = r.parent_id ";

RunInfo read_run(const sqlite::Stmt& s) {
  RunInfo r;
  r.uuid = stored_uuid(s.text(0));
  r.experiment = stored_experiment(!s.is_null(1), s.text(1), r.uuid);
  r.name = s.text(2);
  r.status = stored_run_status(s.text(3), r.uuid);
  r.start_time = s.real(4);
  r.end_time = s.is_null(5) ? 0 : s.real(5);
  r.heartbeat = s.is_null(6) ? 0 : s.real(6);
  r.parent_uuid = s.is_null(7) ? "" : stored_uuid(s.text(7), "a run's stored parent UUID");
  r.command_line = s.text(8);
  r.config_text = s.text(9);
  r.config_hash = s.text(10);
  r.host = s.text(11);
  r.pid = stored_pid(s.int64(12), r.uuid);
  r.pid_start = s.is_null(13) ? 0 : s.int64(13);
  return r;
}

// Adds records of `kind` to the run with id `run_id` inside the caller's
// write transaction; the first of a (kind, key, step) is kept. Returns how
// many were added.
int64_t insert_records_locked(const sqlite::Db& db, int64_t run_id, std::string_view kind,
                              const std::vector<Record>& records) {
  sqlite::Stmt ins(db,
                   "INSERT INTO records (run_id, kind, key, step, wall_time, payload) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, kind, key, step) DO NOTHING");
  int64_t added = 0;
  for (const auto& r : records) {
    ins.reset();
    ins.bind(1, run_id).bind(2, kind).bind(3, r.key).bind(4, r.step).bind(5, r.wall_time);
    ins.bind_blob(6, r.payload.data(), r.payload.size()).run();
    added += sqlite3_changes(db.get());
  }
  return added;
}

// The migrating transaction as a migration's C++ step sees it.
class SqliteMigrationTxn final : public MigrationTxn {
 public:
  explicit SqliteMigrationTxn(const sqlite::Db& db) : db_(db) {}
  void query(const std::string& sql, const std::function<void(const Row&)>& row) override {
    sqlite::Stmt s(db_, sql);
    const StmtRow r(s);
    while (s.step()) row(r);
  }
  void insert_records(int64_t run_id, std::string_view kind,
                      const std::vector<Record>& records) override {
    insert_records_locked(db_, run_id, kind, records);
  }

 private:
  class StmtRow final : public Row {
   public:
    explicit StmtRow(const sqlite::Stmt& s) : s_(s) {}
    int64_t integer(int col) const override { return s_.int64(col); }
    double real(int col) const override { return s_.real(col); }
    std::string text(int col) const override { return s_.text(col); }
    std::string bytes(int col) const override { return std::string(s_.blob(col)); }

   private:
    const sqlite::Stmt& s_;
  };
  const sqlite::Db& db_;
};

// A path as the path part of a SQLite "file:" URI.
std::string uri_escape(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c <= 0x20 || c >= 0x7f)
      out += fmt::format("%{:02X}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

// A file of zeros beside the store, written while there is room, deleted
// when the disk fills up so that a writer can still record that its run
// failed (Store::release_reserve). Best effort: no room, no reserve. Only a
// regular file is padded: a FIFO is never waited on, a symbolic link never
// followed (its target is not ours to grow).
void keep_reserve(const fs::path& path) {
  constexpr off_t kReserveBytes = 512 * 1024;
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENXIO)  // a link, or a FIFO nobody reads
      log_warn("'{}' is not a regular file; the store keeps no disk reserve", path.string());
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    log_warn("'{}' is not a regular file; the store keeps no disk reserve", path.string());
    ::close(fd);
    return;
  }
  if (st.st_size >= kReserveBytes) {
    ::close(fd);
    return;
  }
  const bool ok = ::posix_fallocate(fd, 0, kReserveBytes) == 0;
  ::close(fd);
  if (!ok) ::unlink(path.c_str());
}

// Checks a store location before SQLite sees it, to give a precise message.
void check_location(const fs::path& path, bool read_only) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st))
      fail(ErrorKind::kStore, "store path '{}' is a folder; give a database file such as '{}'",
           path.string(), (path / "trainscope.db").string());
    if (access(path.c_str(), R_OK) != 0)
      fail(ErrorKind::kStore, "store '{}' is not readable: {}", path.string(),
           std::strerror(errno));
    if (!read_only && access(path.c_str(), W_OK) != 0)
      fail(ErrorKind::kStore,
           "store '{}' is not writable: {}; fix its permissions or use another store",
           path.string(), std::strerror(errno));
    return;
  }
  if (fs::is_symlink(fs::symlink_status(path, ec)))  // a link to nothing
    fail(ErrorKind::kStore,
         "store '{}' is a symbolic link to '{}', which does not exist; make the link point at a "
         "store, or give another path",
         path.string(), fs::read_symlink(path, ec).string());
  if (read_only)
    fail(ErrorKind::kNotFound,
         "store '{}' does not exist; record a run first or open another store", path.string());
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  auto dst = fs::status(dir, ec);
  if (!fs::exists(dst))
    fail(ErrorKind::kStore, "cannot create store '{}': folder '{}' does not exist; create it first",
         path.string(), dir.string());
  if (!fs::is_directory(dst))
    fail(ErrorKind::kStore, "cannot create store '{}': '{}' is not a folder", path.string(),
         dir.string());
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    fail(ErrorKind::kStore, "cannot create store '{}': folder '{}' is not writable ({})",
         path.string(), dir.string(), std::strerror(errno));
}

}  // namespace

// ---------------------------------------------------------------------------

namespace {
constexpr const char* kMemory = ":memory:";

// Artifacts live beside the database file ("runs.db" -> "runs-artifacts/"),
// those of an in-memory store in a temporary folder of its own.
fs::path artifact_root_for(const fs::path& path) {
  if (path == kMemory)
    return fs::temp_directory_path() /
           ("trainscope-memory-" + new_uuid().substr(0, 8) + "-artifacts");
  return path.parent_path() / (path.stem().string() + "-artifacts");
}
}  // namespace

std::unique_ptr<Store> open_sqlite(std::string_view location, const StoreOptions& options) {
  return std::make_unique<SqliteStore>(fs::path(location), options);
}

SqliteStore::SqliteStore(fs::path path, const StoreOptions& options)
    : SqliteStore(path, artifact_root_for(path), options) {}

SqliteStore::SqliteStore(fs::path path, fs::path artifact_root, const StoreOptions& options)
    : Store(make_folder_artifact_store(artifact_root), options),
      path_(std::move(path)),
      memory_(path_ == kMemory),
      artifact_root_(std::move(artifact_root)) {
  if (!memory_) check_location(path_, options.read_only);
  // No -o of this process replaces the store or its journal files.
  if (!memory_)
    for (const char* end : {"", "-wal", "-shm", "-journal"})
      core::protect_from_output(path_.string() + end, "the store this command opened");
  open_connection();
  std::lock_guard lock(mu_);
  // Reading first: a file that is not a database, or one from a newer
  // trainscope, is refused before anything is written to it.
  int version;
  try {
    version = read_version_locked();
  } catch (const Error&) {
    // A WAL store on read-only media (or in a read-only folder): SQLite
    // cannot create the -shm file a WAL reader needs. Nothing can write
    // there either, so the file is read as immutable.
    if (!options.read_only || memory_ ||
        access(path_.parent_path().empty() ? "." : path_.parent_path().c_str(), W_OK) == 0)
      throw;
    open_connection(/*immutable=*/true);
    version = read_version_locked();
  }
  if (version > latest_schema_version())
    fail(ErrorKind::kStore,
         "store '{}' has schema version {}, newer than this trainscope ({}, schema {}); "
         "upgrade trainscope, the store was not modified",
         path_.string(), version, core::version(), latest_schema_version());
  db_.exec("PRAGMA foreign_keys = ON");
  if (options.read_only) {
    if (version < latest_schema_version())
      fail(ErrorKind::kStore,
           "store '{}' has schema version {} and needs migrating to {}; open it once without "
           "read-only mode",
           path_.string(), version, latest_schema_version());
    return;
  }
  if (!memory_) use_wal_locked();
  if (version < latest_schema_version()) migrate_locked();
  if (!memory_) keep_reserve(reserve_path());
}

fs::path SqliteStore::reserve_path() const {
  fs::path p = path_;
  p += "-reserve";
  return p;
}

bool SqliteStore::release_reserve() {
  std::error_code ec;
  // Only a reserve keep_reserve wrote frees room: never a link or a FIFO.
  return !memory_ && fs::is_regular_file(fs::symlink_status(reserve_path(), ec)) &&
         fs::remove(reserve_path(), ec);
}

bool SqliteStore::shrink_log() {
  if (memory_) return false;
  fs::path wal = path_;
  wal += "-wal";
  std::error_code ec;
  const auto before = fs::file_size(wal, ec);
  if (ec || before == 0) return false;
  std::lock_guard lock(mu_);
  sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  const auto after = fs::file_size(wal, ec);
  return !ec && after < before;
}

SqliteStore::~SqliteStore() {
  if (!memory_) return;
  std::error_code ec;
  fs::remove_all(artifact_root_, ec);
}

std::string SqliteStore::describe() const {
  return memory_ ? std::string("sqlite::memory:") : "sqlite:" + path_.string();
}

int SqliteStore::latest_schema_version() const { return migrations().back().version; }

void SqliteStore::open_connection(bool immutable) {
  sqlite3* raw = nullptr;
  int flags =
      options().read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  std::string name = path_.string();
  if (immutable) {
    flags |= SQLITE_OPEN_URI;
    name = "file:" + uri_escape(name) + "?immutable=1";
  }
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  db_ = sqlite::Db(raw, path_.string());
  if (rc != SQLITE_OK) db_.raise(rc, "opening");
  sqlite3_extended_result_codes(raw, 1);
  if (!options().give_up) {
    sqlite3_busy_timeout(raw, static_cast<int>(options().busy_timeout_seconds * 1000));
    return;
  }
  // As sqlite3_busy_timeout, 5 ms at a time, but giving up once told to.
  sqlite3_busy_handler(
      raw,
      [](void* o, int count) {
        const auto& opts = *static_cast<const StoreOptions*>(o);
        if (opts.give_up->load() || count * 0.005 >= opts.busy_timeout_seconds) return 0;
        sqlite3_sleep(5);
        return 1;
      },
      const_cast<StoreOptions*>(&options()));
}

void SqliteStore::use_wal_locked() {
  // WAL lets readers proceed while one writer commits; NORMAL sync keeps every
  // committed transaction across a process crash (not across power loss).
  for (int attempt = 0;; ++attempt) {
    sqlite::Stmt s(db_, "PRAGMA journal_mode = WAL");
    try {
      if (s.step() && s.text(0) == "wal") break;
    } catch (const Error&) {
      if (attempt > 50) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  db_.exec("PRAGMA synchronous = NORMAL");
}

int SqliteStore::read_version_locked() {
  sqlite::Stmt tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table'");
  bool has_migrations = false;
  int other = 0;
  while (tables.step()) {
    if (tables.text(0) == "schema_migrations") {
      has_migrations = true;
    } else {
      ++other;
    }
  }
  if (!has_migrations) {
    if (other > 0)
      fail(ErrorKind::kStore,
           "'{}' is a SQLite database but not a trainscope store (no schema_migrations table); "
           "use another store path",
           path_.string());
    return 0;
  }
  sqlite::Stmt v(
      db_,
      "SELECT COALESCE(MAX(version), 0) AS \"schema_migrations.version\" FROM schema_migrations");
  v.step();
  return static_cast<int>(v.int64(0));
}

void SqliteStore::migrate_locked() {
  sqlite::WriteTxn txn(db_);
  // Re-read under the write lock: another process may have migrated meanwhile.
  int version = read_version_locked();
  for (const auto& m : migrations()) {
    if (m.version <= version) continue;
    log_debug("store {}: migrating schema {} -> {} ({})", path_.string(), m.version - 1, m.version,
              m.description);
    try {
      db_.exec(m.sql);
    } catch (const core::Error&) {  // its message holds the SQL, lines of it
      // A migration this store lists as not applied, whose tables are there
      // (a row of schema_migrations deleted): the transaction rolls back.
      fail(ErrorKind::kStore,
           "store '{}': migrating its schema to version {} failed ({}); its schema_migrations "
           "table does not say what its tables are: the store is damaged, and was not changed",
           path_.string(), m.version, escape_for_display(sqlite3_errmsg(db_.get())));
    }
    if (m.step) {
      SqliteMigrationTxn step(db_);
      m.step(step);
    }
    if (m.sql_after) db_.exec(m.sql_after);
    sqlite::Stmt ins(db_,
                     "INSERT INTO schema_migrations (version, description, applied_time) "
                     "VALUES (?, ?, ?)");
    ins.bind(1, m.version).bind(2, m.description).bind(3, unix_now()).run();
  }
  txn.commit();
}

int SqliteStore::schema_version() {
  std::lock_guard lock(mu_);
  return read_version_locked();
}

int64_t SqliteStore::run_id_locked(std::string_view uuid) {
  sqlite::Stmt s(db_, "SELECT id FROM runs WHERE uuid = ?");
  s.bind(1, uuid);
  if (!s.step())
    fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid), describe());
  return s.int64(0);
}

void SqliteStore::check_lease_locked(std::string_view uuid) {
  if (!lease(uuid)) return;
  sqlite::Stmt s(db_, "SELECT status, host, pid, pid_start FROM runs WHERE uuid = ?");
  s.bind(1, uuid);
  if (!s.step()) return;  // deleted: the write itself reports it
  check_lease(uuid, stored_run_status(s.text(0), uuid),
              {s.text(1), s.int64(2), s.is_null(3) ? 0 : s.int64(3)});
}

// --- runs -------------------------------------------------------------------

RunInfo SqliteStore::create_run(const NewRun& run) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  double now = unix_now();
  sqlite::Stmt(db_,
               "INSERT INTO experiments (name, created_time) VALUES (?, ?) "
               "ON CONFLICT (name) DO NOTHING")
      .bind(1, run.experiment)
      .bind(2, now)
      .run();
  sqlite::Stmt e(db_, "SELECT id FROM experiments WHERE name = ?");
  e.bind(1, run.experiment);
  e.step();
  int64_t experiment_id = e.int64(0);

  sqlite::Stmt ins(db_,
                   "INSERT INTO runs (uuid, experiment_id, name, status, start_time, heartbeat, "
                   "parent_id, command_line, config_text, config_hash, host, pid, pid_start) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  std::string uuid = new_uuid();
  std::string name = run.name;
  if (run.unique_name && !name.empty()) {
    sqlite::Stmt taken(db_,
                       "SELECT name FROM runs WHERE name = ?1 OR "
                       "substr(name, 1, length(?1) + 1) = ?1 || '-'");
    taken.bind(1, name);
    std::vector<std::string> names;
    while (taken.step()) names.push_back(taken.text(0));
    name = next_free_name(name, names);
  }
  ins.bind(1, uuid).bind(2, experiment_id).bind(3, name).bind(4, to_string(run.status));
  ins.bind(5, now).bind(6, now);
  if (run.parent_uuid.empty()) {
    ins.bind_null(7);
  } else {
    ins.bind(7, run_id_locked(run.parent_uuid));
  }
  ins.bind(8, run.command_line).bind(9, run.config_text);
  ins.bind(10, run.config_text.empty() ? std::string() : sha256_hex(run.config_text));
  const WriterIdentity me = writer();
  ins.bind(11, me.host).bind(12, me.pid).bind(13, me.pid_start);
  ins.run();
  txn.commit();
  if (run.status == RunStatus::kRunning) hold_lease(uuid);

  sqlite::Stmt s(db_, std::string("SELECT ") + kRunColumns + "WHERE r.uuid = ?");
  s.bind(1, uuid);
  s.step();
  return read_run(s);
}

void SqliteStore::import_run(const RunInfo& run) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  sqlite::Stmt taken(db_, "SELECT 1 FROM runs WHERE uuid = ?");
  taken.bind(1, run.uuid);
  if (taken.step())
    fail(ErrorKind::kConflict, "run {} is already in {}", short_uuid(run.uuid), describe());
  sqlite::Stmt(db_,
               "INSERT INTO experiments (name, created_time) VALUES (?, ?) "
               "ON CONFLICT (name) DO NOTHING")
      .bind(1, run.experiment)
      .bind(2, run.start_time)
      .run();
  sqlite::Stmt ins(db_,
                   "INSERT INTO runs (uuid, experiment_id, name, status, start_time, end_time, "
                   "heartbeat, parent_id, command_line, config_text, config_hash, host, pid, "
                   "pid_start) VALUES (?, (SELECT id FROM experiments WHERE name = ?), ?, ?, ?, "
                   "?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ins.bind(1, run.uuid).bind(2, run.experiment).bind(3, run.name);
  ins.bind(4, to_string(run.status)).bind(5, run.start_time);
  if (run.end_time > 0) {
    ins.bind(6, run.end_time);
  } else {
    ins.bind_null(6);
  }
  ins.bind(7, run.heartbeat);
  if (run.parent_uuid.empty()) {
    ins.bind_null(8);
  } else {
    ins.bind(8, run_id_locked(run.parent_uuid));
  }
  ins.bind(9, run.command_line).bind(10, run.config_text).bind(11, run.config_hash);
  ins.bind(12, run.host).bind(13, run.pid).bind(14, run.pid_start);
  ins.run();
  txn.commit();
}

std::optional<RunInfo> SqliteStore::find_run(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_, std::string("SELECT ") + kRunColumns + "WHERE r.uuid = ?");
  s.bind(1, uuid);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<RunInfo> SqliteStore::list_runs(const RunFilter& filter) {
  std::lock_guard lock(mu_);
  std::string sql = std::string("SELECT ") + kRunColumnsLight + "WHERE 1 = 1 ";
  if (!filter.experiment.empty()) sql += "AND e.name = ? ";
  if (filter.status) sql += "AND r.status = ? ";
  if (!filter.parent_uuid.empty()) sql += "AND p.uuid = ? AND r.id <> p.id ";
  if (!filter.name.empty()) sql += "AND r.name = ? ";
  if (!filter.uuid_prefix.empty()) sql += "AND substr(r.uuid, 1, ?) = ? ";
  sql += "ORDER BY r.start_time DESC, r.id DESC";
  if (filter.limit > 0) sql += " LIMIT ?";
  sqlite::Stmt s(db_, sql);
  int i = 1;
  if (!filter.experiment.empty()) s.bind(i++, filter.experiment);
  if (filter.status) s.bind(i++, to_string(*filter.status));
  if (!filter.parent_uuid.empty()) s.bind(i++, filter.parent_uuid);
  if (!filter.name.empty()) s.bind(i++, filter.name);
  if (!filter.uuid_prefix.empty()) {
    s.bind(i++, static_cast<int64_t>(filter.uuid_prefix.size()));
    s.bind(i++, filter.uuid_prefix);
  }
  if (filter.limit > 0) s.bind(i++, filter.limit);
  std::vector<RunInfo> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

void SqliteStore::write_status(std::string_view uuid, RunStatus status) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  double now = unix_now();
  sqlite::Stmt s(db_,
                 "UPDATE runs SET status = ?, heartbeat = ?, "
                 "end_time = CASE WHEN ? = 1 THEN ? ELSE NULL END WHERE uuid = ?");
  s.bind(1, to_string(status)).bind(2, now).bind(3, is_terminal(status) ? 1 : 0).bind(4, now);
  s.bind(5, uuid).run();
  if (sqlite3_changes(db_.get()) == 0)
    fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid), describe());
  txn.commit();
}

void SqliteStore::claim_run(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  const double now = unix_now();
  const WriterIdentity me = writer();
  sqlite::Stmt(db_,
               "UPDATE runs SET status = 'running', heartbeat = ?, end_time = NULL, host = ?, "
               "pid = ?, pid_start = ? WHERE uuid = ? AND status <> 'running'")
      .bind(1, now)
      .bind(2, me.host)
      .bind(3, me.pid)
      .bind(4, me.pid_start)
      .bind(5, uuid)
      .run();
  if (sqlite3_changes(db_.get()) == 0) {
    sqlite::Stmt s(db_, "SELECT host, pid, pid_start, heartbeat FROM runs WHERE uuid = ?");
    s.bind(1, uuid);
    if (!s.step())
      fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid),
           describe());
    fail_claim(uuid, {s.text(0), s.int64(1), s.is_null(2) ? 0 : s.int64(2)},
               s.is_null(3) ? 0 : s.real(3));
  }
  txn.commit();
}

void SqliteStore::heartbeat(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  sqlite::Stmt(db_, "UPDATE runs SET heartbeat = ? WHERE uuid = ?")
      .bind(1, unix_now())
      .bind(2, uuid)
      .run();
  txn.commit();
}

void SqliteStore::set_config(std::string_view uuid, std::string_view config_text) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  sqlite::Stmt(db_, "UPDATE runs SET config_text = ?, config_hash = ? WHERE uuid = ?")
      .bind(1, config_text)
      .bind(2, config_text.empty() ? std::string() : sha256_hex(config_text))
      .bind(3, uuid)
      .run();
  if (sqlite3_changes(db_.get()) == 0)
    fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid), describe());
  txn.commit();
}

bool SqliteStore::mark_killed(const RunInfo& judged) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  // Checked under the write lock: a run that just finished, beat again or
  // was claimed by another writer is not overwritten.
  // It ended at its last heartbeat, or now if that is later than now (a
  // clock ahead); an end before its start is no end: unknown (NULL).
  sqlite::Stmt(db_,
               "UPDATE runs SET status = 'killed', end_time = CASE WHEN "
               "MIN(COALESCE(heartbeat, ?1), ?1) >= start_time THEN "
               "MIN(COALESCE(heartbeat, ?1), ?1) END "
               "WHERE uuid = ?2 AND status = 'running' AND host = ?3 AND pid = ?4 AND "
               "COALESCE(pid_start, 0) = ?5 AND COALESCE(heartbeat, 0) <= ?6")
      .bind(1, unix_now())
      .bind(2, judged.uuid)
      .bind(3, judged.host)
      .bind(4, judged.pid)
      .bind(5, judged.pid_start)
      .bind(6, judged.heartbeat)
      .run();
  const bool changed = sqlite3_changes(db_.get()) > 0;
  txn.commit();
  return changed;
}

void SqliteStore::erase_run(std::string_view uuid) {
  std::lock_guard lock(mu_);
  int64_t id = run_id_locked(uuid);
  sqlite::WriteTxn txn(db_);
  sqlite::Stmt(db_, "DELETE FROM runs WHERE id = ?").bind(1, id).run();
  txn.commit();
  std::erase_if(key_ids_, [id](const auto& kv) { return kv.first.first == id; });
}

std::vector<std::string> SqliteStore::list_experiments() {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_, "SELECT name FROM experiments ORDER BY name");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

// --- params and tags ----------------------------------------------------------

void SqliteStore::set_param_locked(int64_t run_id, std::string_view uuid, std::string_view key,
                                   std::string_view value) {
  sqlite::Stmt s(db_, "SELECT value FROM params WHERE run_id = ? AND key = ?");
  s.bind(1, run_id).bind(2, key);
  if (s.step()) {
    std::string old = s.text(0);
    if (!same_param_value(old, value))
      fail(ErrorKind::kConflict,
           "param '{}' of run {} is already '{}'; params are immutable (got '{}'); use a tag for "
           "values that change",
           escape_for_display(key), short_uuid(uuid), escape_for_display(old),
           escape_for_display(value));
    return;
  }
  sqlite::Stmt(db_, "INSERT INTO params (run_id, key, value) VALUES (?, ?, ?)")
      .bind(1, run_id)
      .bind(2, key)
      .bind(3, value)
      .run();
}

void SqliteStore::set_param(std::string_view uuid, std::string_view key, std::string_view value) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  set_param_locked(run_id_locked(uuid), uuid, key, value);
  txn.commit();
}

void SqliteStore::set_params(std::string_view uuid,
                             const std::map<std::string, std::string>& params) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  int64_t id = run_id_locked(uuid);
  for (const auto& [k, v] : params) set_param_locked(id, uuid, k, v);
  txn.commit();
}

std::map<std::string, std::string> SqliteStore::params(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(
      db_, "SELECT key, value FROM params WHERE run_id = (SELECT id FROM runs WHERE uuid = ?)");
  s.bind(1, uuid);
  std::map<std::string, std::string> out;
  while (s.step()) out.emplace(s.text(0), s.text(1));
  return out;
}

// The chunks of one run's key (bind the UUID, then the key).
constexpr const char* kChunksOfKey =
    "FROM metric_chunks c JOIN metric_keys k ON k.id = c.key_id "
    "JOIN runs r ON r.id = k.run_id WHERE r.uuid = ? AND k.key = ?";

namespace {

// SQLite writes a REAL with no fraction as an integer, so a summary's -0.0
// reads back 0.0 (thirty-seventh hunt, B-D6): a summary value of zero takes
// its sign from the key's points, which keep every bit. Only a key whose
// summary holds a zero has its points read.
void restore_zero_signs(const sqlite::Db& db, std::string_view uuid, MetricSummary& m) {
  if (m.last_value != 0 && m.min != 0 && m.max != 0) return;
  sqlite::Stmt s(db, std::string("SELECT c.points ") + kChunksOfKey + " ORDER BY c.seq");
  s.bind(1, uuid).bind(2, m.key);
  std::vector<MetricPoint> pts;
  bool neg = false, pos = false;
  double last = std::nan("");
  while (s.step()) {
    pts.clear();
    codec::decode(s.blob(0), pts);
    for (const auto& p : pts)
      if (p.value == 0) (std::signbit(p.value) ? neg : pos) = true;
    if (!pts.empty()) last = pts.back().value;
  }
  if (m.last_value == 0 && last == 0) m.last_value = last;
  if (m.min == 0 && neg) m.min = -0.0;
  if (m.max == 0 && neg && !pos) m.max = -0.0;
}

}  // namespace

std::map<std::string, RunFields> SqliteStore::run_fields(const std::vector<std::string>& uuids,
                                                         bool params, bool tags, bool metrics) {
  // For a handful of runs the indexed per-run queries win; for many, one
  // pass over each table.
  if (uuids.size() < 64) return Store::run_fields(uuids, params, tags, metrics);
  std::map<std::string, RunFields> out;
  for (const auto& u : uuids) out[u];
  std::lock_guard lock(mu_);
  sqlite::ReadTxn txn(db_);
  auto key_values = [&](const char* table, auto member) {
    sqlite::Stmt s(db_, std::string("SELECT r.uuid, t.key, t.value FROM ") + table +
                            " t JOIN runs r ON r.id = t.run_id");
    while (s.step())
      if (auto it = out.find(s.text(0)); it != out.end())
        (it->second.*member).emplace(s.text(1), s.text(2));
  };
  if (params) key_values("params", &RunFields::params);
  if (tags) key_values("tags", &RunFields::tags);
  if (metrics) {
    sqlite::Stmt s(db_,
                   "SELECT r.uuid, k.key, k.count, COALESCE(k.last_step, -1) AS "
                   "\"metric_keys.last_step\", k.last_value, "
                   "k.min_value, "
                   "k.max_value FROM metric_keys k JOIN runs r ON r.id = k.run_id "
                   "WHERE k.count <> 0 ORDER BY k.key");
    while (s.step())
      if (auto it = out.find(s.text(0)); it != out.end()) {
        it->second.metrics.push_back(
            {s.text(1), s.int64(2), s.int64(3), s.real(4), s.real(5), s.real(6)});
        codec::check_summary(it->second.metrics.back(), it->first);
        restore_zero_signs(db_, it->first, it->second.metrics.back());
      }
  }
  return out;
}

void SqliteStore::set_tag(std::string_view uuid, std::string_view key, std::string_view value) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  int64_t id = run_id_locked(uuid);
  sqlite::Stmt(db_,
               "INSERT INTO tags (run_id, key, value) VALUES (?, ?, ?) "
               "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value")
      .bind(1, id)
      .bind(2, key)
      .bind(3, value)
      .run();
  txn.commit();
}

void SqliteStore::delete_tag(std::string_view uuid, std::string_view key) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  int64_t id = run_id_locked(uuid);
  sqlite::Stmt(db_, "DELETE FROM tags WHERE run_id = ? AND key = ?").bind(1, id).bind(2, key).run();
  txn.commit();
}

std::map<std::string, std::string> SqliteStore::tags(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT key, value FROM tags WHERE run_id = (SELECT id FROM runs WHERE uuid = ?)");
  s.bind(1, uuid);
  std::map<std::string, std::string> out;
  while (s.step()) out.emplace(s.text(0), s.text(1));
  return out;
}

// --- metrics ------------------------------------------------------------------

int64_t SqliteStore::key_id_locked(int64_t run_id, const std::string& key) {
  auto it = key_ids_.find({run_id, key});
  if (it != key_ids_.end()) return it->second;
  sqlite::Stmt(db_,
               "INSERT INTO metric_keys (run_id, key) VALUES (?, ?) "
               "ON CONFLICT (run_id, key) DO NOTHING")
      .bind(1, run_id)
      .bind(2, key)
      .run();
  sqlite::Stmt s(db_, "SELECT id FROM metric_keys WHERE run_id = ? AND key = ?");
  s.bind(1, run_id).bind(2, key);
  s.step();
  int64_t id = s.int64(0);
  // Cached before the enclosing transaction commits; append_metrics drops
  // the run's cached ids when that transaction fails.
  key_ids_.emplace(std::make_pair(run_id, key), id);
  return id;
}

void SqliteStore::append_metrics(std::string_view uuid, const std::vector<MetricSeries>& batch) {
  std::lock_guard lock(mu_);
  const int64_t run_id = run_id_locked(uuid);
  try {
    sqlite::WriteTxn txn(db_);
    check_lease_locked(uuid);
    sqlite::Stmt next_seq(
        db_,
        "SELECT COALESCE(MAX(seq) + 1, 0) AS \"metric_chunks.seq\" FROM metric_chunks "
        "WHERE key_id = ?");
    sqlite::Stmt summary(db_, "SELECT count, min_value, max_value FROM metric_keys WHERE id = ?");
    sqlite::Stmt update(db_,
                        "UPDATE metric_keys SET count = ?, last_step = ?, last_value = ?, "
                        "min_value = ?, max_value = ? WHERE id = ?");
    sqlite::Stmt insert(db_,
                        "INSERT INTO metric_chunks (key_id, seq, n, first_step, last_step, points) "
                        "VALUES (?, ?, ?, ?, ?, ?)");
    std::string blob;
    for (const auto& series : batch) {
      if (series.points.empty()) continue;
      int64_t key_id = key_id_locked(run_id, series.key);
      next_seq.reset();
      next_seq.bind(1, key_id);
      next_seq.step();
      int64_t seq = next_seq.int64(0);
      summary.reset();
      summary.bind(1, key_id);
      if (!summary.step())
        fail(ErrorKind::kStore, "metric key '{}' vanished during append", series.key);
      int64_t count = summary.int64(0);
      double mn = summary.real(1), mx = summary.real(2);
      for (const auto& p : series.points) {
        if (!std::isfinite(p.value)) continue;
        if (std::isnan(mn) || p.value < mn) mn = p.value;
        if (std::isnan(mx) || p.value > mx) mx = p.value;
      }
      const auto& pts = series.points;
      for (size_t off = 0; off < pts.size(); off += kMaxChunkPoints) {
        size_t n = std::min(kMaxChunkPoints, pts.size() - off);
        blob.clear();
        codec::encode(pts.data() + off, n, blob);
        insert.reset();
        insert.bind(1, key_id).bind(2, seq++).bind(3, static_cast<int64_t>(n));
        insert.bind(4, pts[off].step).bind(5, pts[off + n - 1].step);
        insert.bind_blob(6, blob.data(), blob.size());
        insert.run();
      }
      update.reset();
      update.bind(1, count + static_cast<int64_t>(pts.size())).bind(2, pts.back().step);
      update.bind(3, pts.back().value).bind(4, mn).bind(5, mx).bind(6, key_id).run();
    }
    txn.commit();
  } catch (...) {
    // Key ids created inside the failed transaction were rolled back.
    std::erase_if(key_ids_, [run_id](const auto& kv) { return kv.first.first == run_id; });
    throw;
  }
}

namespace {

// The last point a key's row records (codec::check_last); a NULL step reads
// -1, which no point has. Its count is checked against its chunks' first
// (codec::check_total). Inside a read transaction.
std::pair<int64_t, double> recorded_last(const sqlite::Db& db, std::string_view uuid,
                                         std::string_view key) {
  sqlite::Stmt s(db,
                 "SELECT COALESCE(k.last_step, -1) AS \"metric_keys.last_step\", k.last_value, "
                 "k.count, (SELECT "
                 "COALESCE(SUM(c.n), 0) FROM metric_chunks c WHERE c.key_id = k.id) AS "
                 "\"metric_chunks.n\" FROM "
                 "metric_keys k JOIN runs r ON r.id = k.run_id WHERE r.uuid = ? AND k.key = ?");
  s.bind(1, uuid).bind(2, key);
  if (!s.step()) return {-1, std::nan("")};
  codec::check_total(s.int64(3), s.int64(2), key, uuid);
  return {s.int64(0), s.real(1)};
}

}  // namespace

std::vector<MetricPoint> SqliteStore::metric(std::string_view uuid, std::string_view key) {
  std::lock_guard lock(mu_);
  sqlite::ReadTxn txn(db_);
  sqlite::Stmt total(
      db_, std::string("SELECT COALESCE(SUM(c.n), 0) AS \"metric_chunks.n\" ") + kChunksOfKey);
  total.bind(1, uuid).bind(2, key);
  total.step();
  std::vector<MetricPoint> out;
  // A damaged store may claim any count: reserve what is plausible only.
  const int64_t claimed = total.int64(0);
  if (claimed > 0) out.reserve(static_cast<size_t>(std::min<int64_t>(claimed, 1 << 24)));
  sqlite::Stmt s(db_, std::string("SELECT c.points ") + kChunksOfKey + " ORDER BY c.seq");
  s.bind(1, uuid).bind(2, key);
  while (s.step()) codec::decode(s.blob(0), out);
  codec::check_count(claimed, out.size(), key, uuid);
  const auto [last_step, last_value] = recorded_last(db_, uuid, key);
  codec::check_last(out, last_step, last_value, key, uuid);
  codec::check_own(out, key, uuid);
  return out;
}

namespace {

// The seq of the chunk of a key that holds its point `first` (chunk sizes
// read, no points), `before` set to the points of the chunks before it;
// -1 when the key has no more than `first` points. Inside a read
// transaction.
int64_t first_chunk_of(const sqlite::Db& db, std::string_view uuid, std::string_view key,
                       int64_t first, int64_t& before) {
  sqlite::Stmt sizes(db, std::string("SELECT c.seq, c.n ") + kChunksOfKey + " ORDER BY c.seq");
  sizes.bind(1, uuid).bind(2, key);
  before = 0;
  while (sizes.step()) {
    const int64_t n = sizes.int64(1);
    if (before + n > first) return sizes.int64(0);
    before += n;
  }
  return -1;
}

}  // namespace

std::vector<MetricPoint> SqliteStore::metric_from(std::string_view uuid, std::string_view key,
                                                  int64_t first) {
  if (first <= 0) return metric(uuid, key);
  std::lock_guard lock(mu_);
  sqlite::ReadTxn txn(db_);
  // Chunk sizes first (no BLOBs read) to find the chunk holding point
  // `first`; then only that chunk and the later ones.
  int64_t before = 0;
  const int64_t from_seq = first_chunk_of(db_, uuid, key, first, before);
  std::vector<MetricPoint> out;
  if (from_seq < 0) return out;
  sqlite::Stmt s(db_,
                 std::string("SELECT c.points ") + kChunksOfKey + " AND c.seq >= ? ORDER BY c.seq");
  s.bind(1, uuid).bind(2, key).bind(3, from_seq);
  while (s.step()) codec::decode(s.blob(0), out);
  const auto [last_step, last_value] = recorded_last(db_, uuid, key);
  codec::check_last(out, last_step, last_value, key, uuid);
  codec::check_own(out, key, uuid);
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(
                                           std::min<int64_t>(first - before, std::ssize(out))));
  return out;
}

void SqliteStore::scan_metric(std::string_view uuid, std::string_view key, int64_t first,
                              const std::function<bool(const std::vector<MetricPoint>&)>& each) {
  first = std::max<int64_t>(first, 0);
  std::lock_guard lock(mu_);
  sqlite::ReadTxn txn(db_);
  int64_t before = 0;
  const int64_t from_seq = first_chunk_of(db_, uuid, key, first, before);
  if (from_seq < 0) return;
  sqlite::Stmt s(db_,
                 std::string("SELECT c.points ") + kChunksOfKey + " AND c.seq >= ? ORDER BY c.seq");
  s.bind(1, uuid).bind(2, key).bind(3, from_seq);
  int64_t skip = first - before;  // of the first chunk's points
  const auto [last_step, last_value] = recorded_last(db_, uuid, key);
  std::vector<MetricPoint> chunk;
  bool more = s.step();
  while (more) {
    chunk.clear();
    codec::decode(s.blob(0), chunk);
    more = s.step();
    if (!more) codec::check_last(chunk, last_step, last_value, key, uuid);
    codec::check_own(chunk, key, uuid);
    const int64_t k = std::min<int64_t>(skip, std::ssize(chunk));
    chunk.erase(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(k));
    skip -= k;
    if (!chunk.empty() && !each(chunk)) return;
  }
}

std::vector<MetricSummary> SqliteStore::metric_summaries(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT k.key, k.count, COALESCE(k.last_step, -1) AS \"metric_keys.last_step\", "
                 "k.last_value, k.min_value, "
                 "k.max_value "
                 "FROM metric_keys k JOIN runs r ON r.id = k.run_id "
                 "WHERE r.uuid = ? AND k.count <> 0 ORDER BY k.key");
  s.bind(1, uuid);
  std::vector<MetricSummary> out;
  while (s.step()) {
    MetricSummary m;
    m.key = s.text(0);
    m.count = s.int64(1);
    m.last_step = s.int64(2);
    m.last_value = s.real(3);
    m.min = s.real(4);
    m.max = s.real(5);
    codec::check_summary(m, uuid);
    restore_zero_signs(db_, uuid, m);
    out.push_back(std::move(m));
  }
  return out;
}

// --- environment and fingerprints ---------------------------------------------------

void SqliteStore::set_environment(std::string_view uuid,
                                  const std::map<std::string, std::string>& entries) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  int64_t id = run_id_locked(uuid);
  sqlite::Stmt ins(db_,
                   "INSERT INTO environment (run_id, key, value) VALUES (?, ?, ?) "
                   "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value");
  for (const auto& [k, v] : entries) {
    ins.reset();
    ins.bind(1, id).bind(2, k).bind(3, v).run();
  }
  txn.commit();
}

std::map<std::string, std::string> SqliteStore::environment(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT key, value FROM environment "
                 "WHERE run_id = (SELECT id FROM runs WHERE uuid = ?)");
  s.bind(1, uuid);
  std::map<std::string, std::string> out;
  while (s.step()) out.emplace(s.text(0), s.text(1));
  return out;
}

// --- records ------------------------------------------------------------------

int64_t SqliteStore::insert_records(std::string_view uuid, std::string_view kind,
                                    const std::vector<Record>& records) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  const int64_t id = run_id_locked(uuid);
  const int64_t added = insert_records_locked(db_, id, kind, records);
  txn.commit();
  return added;
}

std::vector<Record> SqliteStore::read_records(std::string_view uuid, std::string_view kind,
                                              std::optional<std::string_view> key) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT key, step, wall_time, payload FROM records "
                 "WHERE run_id = (SELECT id FROM runs WHERE uuid = ?) AND kind = ? "
                 "AND (? OR key = ?) ORDER BY id");
  s.bind(1, uuid).bind(2, kind).bind(3, int64_t{!key}).bind(4, key.value_or(""));
  std::vector<Record> out;
  while (s.step()) {
    const double wall = s.real(2);
    out.push_back({s.text(0), s.int64(1), std::isnan(wall) ? 0.0 : wall, std::string(s.blob(3))});
  }
  return out;
}

std::vector<Record> SqliteStore::read_record_sample(std::string_view uuid, std::string_view kind,
                                                    size_t most, int64_t& count) {
  std::lock_guard lock(mu_);
  sqlite::ReadTxn txn(db_);
  constexpr const char* kOfKind =
      " FROM records WHERE run_id = (SELECT id FROM runs WHERE uuid = ?) AND kind = ?";
  sqlite::Stmt n(db_, std::string("SELECT count(*)") + kOfKind);
  n.bind(1, uuid).bind(2, kind);
  count = n.step() ? n.int64(0) : 0;
  const int64_t stride = sample_stride(count, most);
  // The ids in order (records_by_kind holds them), then each sampled
  // record by its id: no other record's payload is read.
  sqlite::Stmt ids(db_, std::string("SELECT id") + kOfKind + " ORDER BY id");
  ids.bind(1, uuid).bind(2, kind);
  sqlite::Stmt one(db_, "SELECT key, step, wall_time, payload FROM records WHERE id = ?");
  std::vector<Record> out;
  for (int64_t i = 0; ids.step(); ++i) {
    if (i % stride != 0) continue;
    one.reset();
    one.bind(1, ids.int64(0));
    if (!one.step()) continue;
    const double wall = one.real(2);
    out.push_back(
        {one.text(0), one.int64(1), std::isnan(wall) ? 0.0 : wall, std::string(one.blob(3))});
  }
  return out;
}

std::map<std::string, int64_t> SqliteStore::record_kinds(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT kind, count(*) FROM records "
                 "WHERE run_id = (SELECT id FROM runs WHERE uuid = ?) GROUP BY kind");
  s.bind(1, uuid);
  std::map<std::string, int64_t> out;
  while (s.step()) out.emplace(s.text(0), s.int64(1));
  return out;
}

// --- artifacts ------------------------------------------------------------------

std::optional<ArtifactInfo> SqliteStore::find_artifact(std::string_view uuid,
                                                       std::string_view name) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT a.name, a.kind, a.sha256, a.size, a.created_time FROM artifacts a "
                 "JOIN runs r ON r.id = a.run_id WHERE r.uuid = ? AND a.name = ?");
  s.bind(1, uuid).bind(2, name);
  if (!s.step()) return std::nullopt;
  return stored_artifact({s.text(0), s.text(1), s.text(2), s.int64(3), s.real(4), {}}, uuid);
}

ArtifactInfo SqliteStore::insert_artifact(std::string_view uuid, const ArtifactInfo& info) {
  std::lock_guard lock(mu_);
  sqlite::WriteTxn txn(db_);
  check_lease_locked(uuid);
  const int64_t run_id = run_id_locked(uuid);
  sqlite::Stmt(db_,
               "INSERT INTO artifacts (run_id, name, kind, sha256, size, created_time) "
               "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, name) DO NOTHING")
      .bind(1, run_id)
      .bind(2, info.name)
      .bind(3, info.kind)
      .bind(4, info.sha256)
      .bind(5, info.size)
      .bind(6, info.created_time)
      .run();
  sqlite::Stmt s(db_,
                 "SELECT name, kind, sha256, size, created_time FROM artifacts "
                 "WHERE run_id = ? AND name = ?");
  s.bind(1, run_id).bind(2, info.name);
  s.step();
  ArtifactInfo out =
      stored_artifact({s.text(0), s.text(1), s.text(2), s.int64(3), s.real(4), {}}, uuid);
  txn.commit();
  return out;
}

std::vector<ArtifactInfo> SqliteStore::artifact_rows(std::string_view uuid) {
  std::lock_guard lock(mu_);
  sqlite::Stmt s(db_,
                 "SELECT a.name, a.kind, a.sha256, a.size, a.created_time FROM artifacts a "
                 "JOIN runs r ON r.id = a.run_id WHERE r.uuid = ? ORDER BY a.name");
  s.bind(1, uuid);
  std::vector<ArtifactInfo> out;
  while (s.step())
    out.push_back(
        stored_artifact({s.text(0), s.text(1), s.text(2), s.int64(3), s.real(4), {}}, uuid));
  return out;
}

}  // namespace trainscope::store
