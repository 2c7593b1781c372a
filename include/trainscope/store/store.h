// The run store: experiments, runs, params, tags, metrics and artifacts.
//
// Every recorder writes here and every reader (CLI, study layer, web server)
// reads from here. A Store is safe for concurrent use from several threads of
// one process, and several processes may open the same store at once.
//
// Backends are registered by URI scheme (registry.h): SQLite ("sqlite:PATH",
// the default; "sqlite::memory:" for a private in-memory store) and
// PostgreSQL ("postgresql://USER@HOST:PORT/DB", one store for many hosts). The
// interface speaks in trainscope types only and names runs by UUID, so
// another backend can sit behind it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/core/error.h"

namespace trainscope::store {

// Where a run is in its life: created (not started), running (one writer
// holds its lease), then one terminal status it never leaves.
enum class RunStatus { kCreated, kRunning, kFinished, kFailed, kKilled, kStopped };

// "created", "running", ...
const char* to_string(RunStatus s);
// Parses a status name; throws Error listing the valid names otherwise.
RunStatus parse_run_status(std::string_view s);
// True for the statuses a run cannot leave (finished, failed, killed, stopped).
bool is_terminal(RunStatus s);

// A run as the store records it (list_runs, find_run, resolve_run): a
// plain value, a snapshot of when it was read.
struct RunInfo {
  std::string uuid;        // canonical lowercase UUID: the run's only identity
  std::string experiment;  // experiment name
  std::string name;        // human name, may be empty, need not be unique
  RunStatus status = RunStatus::kCreated;
  double start_time = 0;     // unix seconds
  double end_time = 0;       // unix seconds, 0 while not ended
  double heartbeat = 0;      // unix seconds of the last heartbeat
  std::string parent_uuid;   // empty unless the run belongs to a study
  std::string command_line;  // empty in list_runs() results
  std::string config_text;   // empty in list_runs() results
  std::string config_hash;   // SHA-256 of config_text
  std::string host;
  int64_t pid = 0;
  // Start time of the process in clock ticks since boot: with host and pid
  // it tells a live writer from a reused PID (see reap_stale_runs).
  int64_t pid_start = 0;
};

// How long a run has taken: until its end, until `now` while its writer
// lives, else (a writer gone: stale, or killed) until its last heartbeat.
// NaN when the stored times give no duration (an end before the start, a
// time outside the years 1 to 9999): every reader shows none.
double run_seconds(const RunInfo& run, double now);
// Whether `unix_seconds` is a time a reader shows (the years 1 to 9999).
bool is_a_time(double unix_seconds);
// Whether `unix_seconds` is a metric point's time: writers record the time
// of day, seconds since 1970, before the year 10000.
bool is_point_time(double unix_seconds);
// Whether `s` is a UUID as the store keeps it: lower-case hex digits in
// groups of 8-4-4-4-12.
bool is_stored_uuid(std::string_view s);
// Seconds from a run's start to `unix_seconds` (a metric point's time), for
// axes of time since the start: NaN when either is no time a reader shows.
double since_start(const RunInfo& run, double unix_seconds);

// The process that writes a run: a run's writer holds its lease (see
// Store::set_status). `pid_start` tells a live writer from a reused PID.
struct WriterIdentity {
  std::string host;
  int64_t pid = 0;
  int64_t pid_start = 0;  // the process's start, in clock ticks since boot
  // Spelled out: this header is also compiled as C++17 (tests/fuzz_torch).
  bool operator==(const WriterIdentity& o) const {
    return host == o.host && pid == o.pid && pid_start == o.pid_start;
  }
};

// The calling process, as it writes runs.
WriterIdentity this_process();

// How long a run of another host may be silent before it is judged gone
// (StoreOptions::stale_after_seconds; writers beat every 5 s).
inline constexpr double kStaleAfterSeconds = 30.0;

// How a reader sees a run, without changing it. A run recorded "running"
// whose writer is gone (this host: its process has ended; another host: no
// heartbeat for longer than `stale_after_seconds` at `now`) is "stale"; a
// writer's open would mark it killed (Store::reap_stale_runs).
struct Liveness {
  std::string status;  // to_string(run.status), or "stale"
  std::string note;    // why a run is stale, e.g. "no heartbeat since 2026-...Z"; else empty
  // Whether the run was judged stale (a note says why).
  bool stale() const { return !note.empty(); }
};
// The Liveness of `run` at `now` (unix seconds) by `stale_after_seconds`:
// a run not "running", or whose writer still lives, keeps its status.
// Reads this host's process table only: any thread.
Liveness liveness(const RunInfo& run, double now, double stale_after_seconds = kStaleAfterSeconds);

// Thrown by a write into a run whose lease this store held and lost: the
// run was marked killed while its writer was silent (paused, say) or was
// taken over by another process (a resume). The run is left to whoever
// holds it now; the writer must stop. Kind: kConflict.
class LeaseLost : public core::Error {
 public:
  using core::Error::Error;
  ~LeaseLost() override;
};

// What a new run is created with.
struct NewRun {
  std::string experiment = "default";
  std::string name;
  std::string parent_uuid;
  std::string command_line;
  std::string config_text;
  RunStatus status = RunStatus::kRunning;
  // A default name ("demo" from demo.yaml): when a run already has it, the
  // run is named "demo-2", "demo-3", ... instead, chosen inside the
  // creating transaction, so that a name keeps naming one run.
  bool unique_name = false;
};

// The first of `base`, `base-2`, `base-3`, ... that is not in `taken`.
std::string next_free_name(const std::string& base, const std::vector<std::string>& taken);

// Which runs list_runs() returns; every field set narrows the result.
struct RunFilter {
  std::string experiment;           // empty: all
  std::optional<RunStatus> status;  // unset: all
  std::string parent_uuid;          // its runs, never itself (a damaged store); empty: all
  std::string name;                 // exact run name; empty: all
  std::string uuid_prefix;          // UUIDs starting with this; empty: all
  int64_t limit = 0;                // 0: no limit; newest first
};

// One metric point. NaN and +-Inf are stored bit for bit.
struct MetricPoint {
  int64_t step = 0;
  double wall_time = 0;  // unix seconds
  double value = 0;
};

// A batch of points for one key, appended by one transaction.
struct MetricSeries {
  std::string key;
  std::vector<MetricPoint> points;
};

// Per-key summary maintained by the store on every append.
struct MetricSummary {
  std::string key;
  int64_t count = 0;
  int64_t last_step = 0;
  double last_value = 0;
  double min = 0;  // over finite values; NaN if there are none
  double max = 0;
};

// A capability's record: what one step of a run produced for a capability
// (fingerprints, profiles, probes' histograms and events, and what comes
// next), as bytes the capability encodes and decodes. The store keeps
// records by run and kind and never looks inside a payload; each kind's
// layout is in docs/store_format.md, its codec in the capability's folder.
struct Record {
  // What the record is about within its kind ("features.conv1/weights"); may
  // be empty. At most kMaxRecordKeyBytes bytes, any bytes.
  std::string key;
  int64_t step = 0;      // the step it belongs to; 0 for a run's one-off records
  double wall_time = 0;  // unix seconds when it was made; 0 when unknown
  std::string payload;   // any bytes, at most kMaxRecordPayloadBytes
};

// A record kind names a series: 1 to 64 bytes of a-z, 0-9, '_', '.' and '-',
// starting with a letter ("histograms", "profile_steps").
inline constexpr size_t kMaxRecordKindBytes = 64;
// Kept small enough for every backend's unique index (PostgreSQL's escaped
// text may take three bytes per byte).
inline constexpr size_t kMaxRecordKeyBytes = 512;
inline constexpr size_t kMaxRecordPayloadBytes = size_t{64} << 20;

// Throws Error(kUsage) naming `kind` and the rule unless it is a record kind.
void check_record_kind(std::string_view kind);
// The same rule for the kind of `what` ("record", "artifact"): 1 to
// kMaxRecordKindBytes bytes of a-z, 0-9, '_', '.' and '-', starting with a
// letter (a kind is a word readers match, never free text).
void check_kind_name(std::string_view what, std::string_view kind);

// A stored artifact: its name in the run, kind, the SHA-256 and size of
// its content, when it was recorded (unix seconds), and where the copy
// is.
struct ArtifactInfo {
  std::string name;  // relative name inside the run's artifact folder
  std::string kind;  // free text: "checkpoint", "stdout", "config", ...
  std::string sha256;
  int64_t size = 0;
  double created_time = 0;
  std::filesystem::path path;  // absolute path of the stored copy
};

// What a runs table reads of each run besides the run itself.
struct RunFields {
  std::map<std::string, std::string> params, tags;
  std::vector<MetricSummary> metrics;
};

// How Store::open opens a store.
struct StoreOptions {
  // Location "SCHEME:REST": "sqlite:PATH", "sqlite::memory:",
  // "postgresql://USER@HOST:PORT/DB[?artifacts=FOLDER]", or a plain path
  // (SQLite). Empty: $TRAINSCOPE_STORE, else "sqlite:./trainscope.db".
  std::string uri;
  // How long a writer waits for another process's lock before failing.
  double busy_timeout_seconds = 30.0;
  // SQLite: once this is true, a write waiting for another process's lock
  // stops waiting and fails as at its busy timeout, writing nothing (a
  // server told to stop, whose client is gone). Null: it waits.
  const std::atomic<bool>* give_up = nullptr;
  // A run still "running" whose heartbeat is older than this is marked killed
  // when the store is opened, unless its writer is a live process of this
  // host (see Store::reap_stale_runs).
  double stale_after_seconds = kStaleAfterSeconds;
  // Open without creating or migrating; writes fail, and nothing is reaped.
  bool read_only = false;
  // Mark runs whose writer is gone killed on open (reap_stale_runs). A
  // reader that opens for writing only to migrate an older schema sets it
  // false: it changes no run.
  bool reap = true;
  // Who this store writes as: the writer recorded in the runs it creates
  // or claims. Unset: this process. Tests stand in for a process of
  // another host with it.
  std::optional<WriterIdentity> writer;
};

// The k of a sample of at most `most` of `count` things, every k-th from
// the first: 1 when count <= most, else ceil(count / most) (`most` 0 is
// taken as 1). Store::sample_records and the dashboard's samples use it.
int64_t sample_stride(int64_t count, size_t most);

// Checks a stored artifact's file against its record: present, the recorded
// size, the recorded SHA-256. Throws Error(kStore), one line naming the file
// and what differs, otherwise.
void verify_artifact(const ArtifactInfo& artifact);

// Checks a run's recorded config against the SHA-256 recorded with it
// (config_hash), as verify_artifact checks a file: a config changed in the
// store after its run recorded it is never trained again (rerun, a
// replay, a resume), built into a model (eval, weights) or planned from
// (a study). Throws Error(kStore), one line naming the run and saying its
// config was changed, when they differ. A run without a config, or
// without a hash (a RunInfo of list_runs, a run recorded before hashes
// were kept), passes: there is nothing to check it by.
void verify_config(const RunInfo& run);

// The default store URI after consulting $TRAINSCOPE_STORE.
std::string default_store_uri();

class ArtifactStore;
struct StoredFile;

// The run store. Public methods are the whole contract every reader and
// writer relies on; a backend implements the protected primitives below and
// inherits the backend-neutral logic (run references, the stale-run reaper,
// artifact bookkeeping). tests/store/conformance_test.cc holds every backend
// to this contract.
//
// Naming: set_* replaces key/value state (params, tags, environment),
// append_* adds a batch to a series (metrics, records), add_artifact copies
// a file in.
class Store {
 public:
  // Opens (creating and migrating when needed) the store named by
  // options.uri through the backend registered for its scheme (see
  // registry.h), then (unless read-only or options.reap is false) marks runs
  // whose writer is gone as killed. Throws Error
  // with a one-line message when the location is not writable, is not a
  // trainscope store, or has a newer schema.
  static std::unique_ptr<Store> open(const StoreOptions& options = {});

  // Closes the store; runs it holds leases of stay as recorded (a
  // RunRecorder ends its run before that).
  virtual ~Store();

  // Where the store lives, for messages.
  virtual std::string describe() const = 0;
  // Schema version of the open store and the newest this build knows.
  virtual int schema_version() = 0;
  // The newest schema this build knows (a constant per backend).
  virtual int latest_schema_version() const = 0;
  // Throws Error(kStore), the line a newer store is refused with at open,
  // when the schema has become newer than this build reads since (a newer
  // trainscope migrated it under a long-lived reader such as `serve`).
  void check_schema();
  // The store's clock, in unix seconds. The times the store stamps (a run's
  // start, heartbeats, end) come from it, and so does the reaper's "now", so
  // that writers on hosts whose clocks differ are judged by one clock: this
  // host's for SQLite, the server's for PostgreSQL.
  virtual double now();

  // --- runs ---------------------------------------------------------------
  // Creates a run in its experiment (created on first use) and returns it.
  // A run created "running" is written by this store (writer()): the store
  // holds its lease from then on (see set_status).
  virtual RunInfo create_run(const NewRun& run) = 0;
  // Creates a run exactly as `run` describes it (UUID, experiment, name,
  // status, times, parent, command line, config, host, pid): how a run is
  // copied from another store (store/copy.h). The parent, if any, must be
  // in this store already. Throws Error(kConflict) if the UUID is taken.
  virtual void import_run(const RunInfo& run);
  // Run by exact UUID; nullopt if absent.
  virtual std::optional<RunInfo> find_run(std::string_view uuid) = 0;
  // Runs matching `filter`, newest first, without command line and config.
  virtual std::vector<RunInfo> list_runs(const RunFilter& filter = {}) = 0;
  // Resolves a user reference: a full UUID, a unique UUID prefix (in any
  // case), or a run name. A name one run has wins over a UUID prefix (as a
  // git ref over an abbreviated hash), with a one-line note on stderr when
  // the prefix would also name other runs, saying how to name them. Throws
  // Error (kNotFound, or kConflict listing candidates) otherwise.
  RunInfo resolve_run(std::string_view ref);
  // Resolves several references in order; a run named twice (by the same
  // reference or two) is in the result once, where it was first named.
  std::vector<RunInfo> resolve_runs(const std::vector<std::string>& refs);
  // Sets status; a terminal status also sets end_time = now.
  //
  // The lease: a run "running" has one writer, the (host, pid, pid_start)
  // recorded in it. Setting "running" claims the run for writer(): in one
  // transaction, and only when the run is not "running" already; otherwise
  // it throws Error(kConflict) naming the run, its writer and what to do
  // (a writer that is gone is first marked killed by the reaper). The store
  // then holds the run's lease, as it does for a run it created running;
  // while it does, every write it makes into that run (status, heartbeat,
  // metrics, records, params, tags, environment, artifacts) checks in the
  // write's own transaction that the run is still "running" with writer()
  // as its writer, and throws LeaseLost otherwise, writing nothing. A terminal status set by the
  // holder ends the lease. Writes into runs this store holds no lease on (an import, a tag, records
  // added to a finished run) are not checked.
  void set_status(std::string_view uuid, RunStatus status);
  // Stamps the run's heartbeat with the store's clock (a RunRecorder does,
  // every 5 s). Checked like any write into a run this store holds the lease
  // of (LeaseLost); an unknown run is not an error.
  virtual void heartbeat(std::string_view uuid) = 0;
  // Replaces a run's recorded config text, and its hash with it: what a
  // study records when it is planned again (`study resume --replan`); a
  // training's config never changes. Checked like any write into a run
  // this store holds the lease of. Throws Error(kNotFound) for an unknown run.
  virtual void set_config(std::string_view uuid, std::string_view config_text) = 0;
  // Marks runs still "running" as killed when their writer is gone: at once
  // when it ran on this host and its process (PID and start time) has
  // ended; when it ran on another host (or its PID is unknown) once its
  // heartbeat is older than stale_after_seconds at `now` (default: the
  // store's clock, now()). A live process of this host is never reaped,
  // however long it is silent (stopped with SIGSTOP or Ctrl-Z, say). A run
  // is marked only as it was judged: one whose writer beat or changed
  // meanwhile is left alone. Returns how many were marked. open() calls
  // it. A read-only store never writes: it marks nothing and returns 0
  // (readers show such runs as stale, see liveness()).
  int reap_stale_runs(double now);
  // reap_stale_runs(now()): the store's own clock.
  int reap_stale_runs();
  // liveness() of `run` by this store's stale threshold at `now` (take
  // now() once for many runs).
  Liveness liveness(const RunInfo& run, double now) const;
  // Who this store writes as: options().writer, else this_process().
  WriterIdentity writer() const;
  // What delete_run does with the runs whose parent is the run deleted (a
  // study's trainings).
  enum class ChildRuns {
    kRefuse,  // throw Error(kConflict) saying how many there are
    kDelete,  // delete them too, and theirs
    kDetach,  // keep them as runs without a parent
  };
  // Deletes a run and everything recorded for it, artifact files included.
  // A run with child runs is refused unless `children` says what to do
  // with them. Returns how many other runs it deleted (kDelete: every run
  // below it, at any depth) or detached (kDetach: its children).
  size_t delete_run(std::string_view uuid, ChildRuns children = ChildRuns::kRefuse);
  // Every experiment's name, sorted.
  virtual std::vector<std::string> list_experiments() = 0;

  // --- params (immutable) and tags (mutable) ------------------------------
  // Sets a param. Setting the same value again is a no-op; a different value
  // throws Error(kConflict) and changes nothing.
  virtual void set_param(std::string_view uuid, std::string_view key, std::string_view value) = 0;
  // Sets many params in one transaction, with the same rule.
  virtual void set_params(std::string_view uuid,
                          const std::map<std::string, std::string>& params) = 0;
  // The run's params by key; empty for an unknown run.
  virtual std::map<std::string, std::string> params(std::string_view uuid) = 0;
  // Sets (replaces) a tag; Error(kNotFound) for an unknown run, LeaseLost as
  // set_status says.
  virtual void set_tag(std::string_view uuid, std::string_view key, std::string_view value) = 0;
  // Removes a tag (an absent one is not an error); errors as set_tag.
  virtual void delete_tag(std::string_view uuid, std::string_view key) = 0;
  // The run's tags by key; empty for an unknown run.
  virtual std::map<std::string, std::string> tags(std::string_view uuid) = 0;

  // The params, tags and/or metric summaries of many runs at once, by
  // UUID: what filtering or sorting 10,000 runs by a field needs, in one
  // query per kind instead of one per run. This default asks run by run.
  virtual std::map<std::string, RunFields> run_fields(const std::vector<std::string>& uuids,
                                                      bool params, bool tags, bool metrics);

  // --- metrics (append-only) ----------------------------------------------
  // Appends all series in one transaction: either every point lands or none.
  virtual void append_metrics(std::string_view uuid, const std::vector<MetricSeries>& batch) = 0;
  // Every point of one key in append order (steps need not be monotonic).
  virtual std::vector<MetricPoint> metric(std::string_view uuid, std::string_view key) = 0;
  // The points of one key from append index `first` on: what a live reader
  // that already holds `first` points still lacks. A backend reads only the
  // chunks holding them; this default reads all and drops the head.
  virtual std::vector<MetricPoint> metric_from(std::string_view uuid, std::string_view key,
                                               int64_t first);
  // metric_from's points, handed to `each` a batch at a time, in order,
  // instead of all at once: a reader that keeps only some of them (a
  // chart's sample) holds one batch. `each` returns false to stop; it must
  // not call this store (a backend may hold its lock meanwhile). A backend
  // hands over one stored chunk at a time (up to 8192 points); this
  // default reads metric_from and hands it over once.
  virtual void scan_metric(std::string_view uuid, std::string_view key, int64_t first,
                           const std::function<bool(const std::vector<MetricPoint>&)>& each);
  // The summary of each key the run has points of, by key; empty for an
  // unknown run.
  virtual std::vector<MetricSummary> metric_summaries(std::string_view uuid) = 0;

  // --- environment manifest ---------------------------------------------------
  // Records "group.key" -> value entries (replacing earlier values of the
  // same keys) in one transaction.
  virtual void set_environment(std::string_view uuid,
                               const std::map<std::string, std::string>& entries) = 0;
  // The run's environment entries; empty for an unknown run.
  virtual std::map<std::string, std::string> environment(std::string_view uuid) = 0;

  // --- records: one series per capability kind (append-only) -----------------
  // Appends `records` of `kind` to the run in one transaction: every one
  // lands or none. A record whose (kind, key, step) the run already has, or
  // an earlier record of the same batch has, is dropped: the first written
  // is kept (a resumed run replays the steps after its last checkpoint).
  // Returns how many were added. Throws Error(kUsage), writing nothing, for
  // a kind that check_record_kind refuses or a key or payload over its
  // limit; Error(kNotFound) for an unknown run. Checked like any write into
  // a run this store holds the lease of. An empty batch writes nothing.
  int64_t append_records(std::string_view uuid, std::string_view kind,
                         const std::vector<Record>& records);
  // The run's records of `kind` (of the one key `key` when it is given), in
  // the order they were added (over several appends, and within one).
  // Empty for an unknown run or a kind it has no record of.
  // While a RecordSampling of this store lives on the calling thread, a
  // call for its kind and no key reads sample_records instead.
  std::vector<Record> records(std::string_view uuid, std::string_view kind,
                              std::optional<std::string_view> key = std::nullopt);
  // At most `most` of the run's records of `kind` (of every key), for a
  // reader that shows a sample (the dashboard's view of a run,
  // store/views.h): all of them, in the order they were added, when there
  // are no more; else every k-th of them from the first (k =
  // sample_stride(count, most)), read without holding the others in
  // memory. `count` is set to how many the run has, counted in the same
  // read. `most` 0 is taken as 1. Empty (count 0) for an unknown run.
  std::vector<Record> sample_records(std::string_view uuid, std::string_view kind, size_t most,
                                     int64_t& count);
  // How many records the run has of each kind it has any of (an empty map
  // for an unknown run): what `runs show` lists for any capability.
  virtual std::map<std::string, int64_t> record_kinds(std::string_view uuid) = 0;

  // --- artifacts -----------------------------------------------------------
  // Copies a file into the run's artifacts under `name` (default: the file's
  // name, a relative path without '.' or '..'), recording SHA-256, size and
  // kind. The same content under the same name again is a no-op; other
  // content throws Error(kConflict) and changes nothing.
  ArtifactInfo add_artifact(std::string_view uuid, const std::filesystem::path& file,
                            std::string_view kind, std::string_view name = {});
  // Writes an artifact in place through `body` (a checkpoint, predictions,
  // a trace): one pass into the artifact folder, hashed as written, synced
  // to disk before it is recorded; no temporary copy elsewhere. Same rules
  // as add_artifact for a name already recorded.
  ArtifactInfo write_artifact(std::string_view uuid, std::string_view name, std::string_view kind,
                              const std::function<void(std::ostream&)>& body);
  // The run's artifacts by name, each with the path of its stored copy.
  std::vector<ArtifactInfo> artifacts(std::string_view uuid);

  // --- a full disk ------------------------------------------------------------
  // Frees the disk space the backend holds in reserve for a full disk (the
  // SQLite backend keeps a 512 KiB file beside the store), so that a writer
  // can still record that its run failed. True when it freed some.
  virtual bool release_reserve() { return false; }
  // Empties the backend's write-ahead log into its database (SQLite: a
  // TRUNCATE checkpoint), which frees the room the log took: past the file
  // size limit (`ulimit -f`) the log is the file that grew, and no reserve
  // frees room in it. True when the log became smaller.
  virtual bool shrink_log() { return false; }

 protected:
  // `artifacts` keeps the files; `options` is what the store was opened with.
  Store(std::unique_ptr<ArtifactStore> artifacts, StoreOptions options);
  const StoreOptions& options() const { return options_; }
  // Records a file the artifact store holds; checks the run and any
  // artifact of that name already recorded.
  ArtifactInfo record_artifact(std::string_view uuid, const std::string& rel, std::string_view kind,
                               const StoredFile& stored);

  // --- leases (see set_status) --------------------------------------------------
  // Records that this store holds the lease of `uuid` as writer(); a
  // backend calls it once its create_run or claim has committed.
  void hold_lease(std::string_view uuid);
  // Ends the lease (the holder set a terminal status).
  void end_lease(std::string_view uuid);
  // The writer this store holds `uuid`'s lease as, if it holds it.
  std::optional<WriterIdentity> lease(std::string_view uuid) const;
  // A backend's in-transaction check: does nothing when this store holds no
  // lease on `uuid` or when the run as read (`status`, `current` writer) is
  // still ours; throws LeaseLost saying what happened otherwise.
  void check_lease(std::string_view uuid, RunStatus status, const WriterIdentity& current);
  // The error a claim of a run still "running" by `current` throws.
  [[noreturn]] void fail_claim(std::string_view uuid, const WriterIdentity& current,
                               double heartbeat);

  // --- backend primitives behind the neutral methods above ---------------------
  // Sets a status other than "running" (see set_status), checking the lease.
  virtual void write_status(std::string_view uuid, RunStatus status) = 0;
  // Sets "running" with writer() as the writer in one transaction, only if
  // the run is not "running" (kNotFound for an unknown run; fail_claim for
  // a running one).
  virtual void claim_run(std::string_view uuid) = 0;
  // Sets status "killed" and end_time = the last heartbeat, only if the run
  // is still "running" with the writer and (at most) the heartbeat it had
  // when it was judged; true when it changed the run.
  virtual bool mark_killed(const RunInfo& judged) = 0;
  // Removes the run's records (the artifact files are removed by the caller).
  // Throws Error(kNotFound) for an unknown run.
  virtual void erase_run(std::string_view uuid) = 0;
  // The recorded artifact `name` of a run (path left empty), if any.
  virtual std::optional<ArtifactInfo> find_artifact(std::string_view uuid,
                                                    std::string_view name) = 0;
  // Records an artifact whose file is already in place. Returns the row that
  // is recorded afterwards: `info`, or the one another writer recorded first.
  virtual ArtifactInfo insert_artifact(std::string_view uuid, const ArtifactInfo& info) = 0;
  // The recorded artifacts of a run by name (paths left empty).
  virtual std::vector<ArtifactInfo> artifact_rows(std::string_view uuid) = 0;
  // append_records once its arguments are checked: writes in one
  // transaction that checks the lease, keeps the first of a (kind, key,
  // step), returns how many were added.
  virtual int64_t insert_records(std::string_view uuid, std::string_view kind,
                                 const std::vector<Record>& records) = 0;
  // records(): in the order they were added.
  virtual std::vector<Record> read_records(std::string_view uuid, std::string_view kind,
                                           std::optional<std::string_view> key) = 0;
  // sample_records() (most >= 1), in one read. This default reads every
  // record and keeps the sample; a backend reads only the sample's.
  virtual std::vector<Record> read_record_sample(std::string_view uuid, std::string_view kind,
                                                 size_t most, int64_t& count);

 private:
  // Throws LeaseLost if this store held `uuid`'s lease and lost it; a read
  // outside the write, to keep a lost writer's files out of the run's folder.
  void check_lease_now(std::string_view uuid);

  std::unique_ptr<ArtifactStore> artifacts_;
  StoreOptions options_;
  mutable std::mutex leases_mu_;
  std::map<std::string, WriterIdentity, std::less<>> leases_;  // guarded by leases_mu_
};

// While one lives, Store::records(uuid, kind) of its store, called on its
// thread for its kind and no one key, reads sample_records(uuid, kind,
// most) instead of every record: how a reader that shows a sample has a
// capability's read function (View::read, which asks for them all) read
// only the sample (store/views.h's read_view_sample). One at a time per
// thread: a second throws Error(kUsage). Not copyable.
class RecordSampling {
 public:
  // Samples `kind` of `store`, at most `most` records a read.
  RecordSampling(const Store& store, std::string_view kind, size_t most);
  // Ends the sampling: records() reads every record again.
  ~RecordSampling();
  RecordSampling(const RecordSampling&) = delete;
  RecordSampling& operator=(const RecordSampling&) = delete;

  // How many reads it answered, the records they gave in all, and how many
  // records the last one counted (sample_records' count).
  int reads() const { return reads_; }
  int64_t taken() const { return taken_; }
  int64_t count() const { return count_; }

 private:
  friend class Store;
  const Store* store_;
  std::string kind_;
  size_t most_;
  int reads_ = 0;
  int64_t taken_ = 0, count_ = 0;
};

}  // namespace trainscope::store
