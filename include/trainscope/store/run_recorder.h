// RunRecorder: the write side of one run, made for the training thread.
//
// log_metric() only appends to an in-memory buffer: it never waits on disk
// or on another process's lock. A background writer thread moves buffered
// points into the store in one transaction per flush, at least every
// flush_interval and on close, and beats the run's heartbeat every
// heartbeat_interval, or every second while it commits points (a killed
// run's duration ends at its last heartbeat). If a flush fails (disk full, ...) the points stay
// buffered, the error is reported once per distinct message, and the flush
// is retried; nothing already in the store is touched.
//
// The recorder's store holds the run's lease (Store::set_status): if the
// run is marked killed while this process is silent (stopped with SIGSTOP
// or Ctrl-Z for longer than a reaper on another host waits) or taken over
// by a resume, the first write that finds out reports it once, the buffers
// are dropped and nothing more is written: flush(), end() and check()
// throw LeaseLost (kConflict) saying what happened.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::store {

// How often the writer thread flushes and beats the heartbeat.
struct RecorderOptions {
  std::chrono::milliseconds flush_interval{200};
  std::chrono::milliseconds heartbeat_interval{5000};
};

// Counters of the writer so far (stats() takes a copy under the lock).
struct RecorderStats {
  int64_t points_logged = 0;   // accepted by log_metric
  int64_t points_flushed = 0;  // committed to the store
  int64_t flushes = 0;         // successful transactions
  int64_t failed_flushes = 0;
  std::string last_error;  // empty when the last flush succeeded
};

// The write side of one run (see the file comment): every method from any
// thread. Holds the store shared (it outlives the recorder's writer).
class RunRecorder {
 public:
  // Creates a new run in `store` (status running) and starts the writer.
  // The store must outlive the recorder.
  static std::unique_ptr<RunRecorder> start(std::shared_ptr<Store> store, const NewRun& run,
                                            RecorderOptions options = {});
  // Attaches to an existing run (for resume): claims it (Store::set_status),
  // which throws Error(kConflict) while another process still writes it.
  static std::unique_ptr<RunRecorder> attach(std::shared_ptr<Store> store, std::string_view uuid,
                                             RecorderOptions options = {});

  // A recorder that records nothing, for a process that trains a run
  // another records (a data-parallel rank > 0: rank 0 records the run).
  // Metric points and records are dropped as they are logged, so its
  // memory stays flat however long it trains; params, tags, the
  // environment and artifacts go to a private in-memory store of its own,
  // so that a unit reading back its own run (metrics, fingerprint) finds
  // what it set. recording() is false. Throws what Store::open throws.
  static std::unique_ptr<RunRecorder> unrecorded(const NewRun& run);

  // Ends the run if end() was not called: "finished" normally, "failed" when
  // destroyed during stack unwinding.
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // The run as created or attached (not refreshed); valid while the recorder
  // is.
  const RunInfo& info() const { return info_; }
  const std::string& uuid() const { return info_.uuid; }
  // False for an unrecorded() recorder: what it is given is kept nowhere.
  bool recording() const { return !discard_; }

  // Buffers one point, stamped with the current wall time. Never blocks on I/O.
  void log_metric(std::string_view key, double value, int64_t step);
  // Same, with an explicit wall time (unix seconds).
  void log_metric(std::string_view key, double value, int64_t step, double wall_time);

  // Buffers a capability's record of `kind` (Store::append_records);
  // written with the metrics, by kind in the order logged. Never blocks on
  // I/O. Throws Error(kUsage) for a kind check_record_kind refuses, and for
  // a key or step record_problem (accept.h) refuses.
  void log_record(std::string_view kind, Record record);
  // Writes through to Store::set_environment now (not buffered); throws what
  // it throws, LeaseLost noted as described above.
  void set_environment(const std::map<std::string, std::string>& entries);

  // Params, tags and artifacts are rare and must fail loudly, so they write
  // through to the store (same names and rules as Store's).
  void set_param(std::string_view key, std::string_view value);
  // Sets many params in one transaction, now (Store::set_params' rule).
  void set_params(const std::map<std::string, std::string>& params);
  // Sets (replaces) a tag, now (Store::set_tag).
  void set_tag(std::string_view key, std::string_view value);
  // Copies `file` in now (Store::add_artifact's rules and errors).
  ArtifactInfo add_artifact(const std::filesystem::path& file, std::string_view kind,
                            std::string_view name = {});
  // Writes an artifact through `body`, which runs on the calling thread
  // (Store::write_artifact's rules and errors).
  ArtifactInfo write_artifact(std::string_view name, std::string_view kind,
                              const std::function<void(std::ostream&)>& body);

  // Writes everything buffered so far and waits until it is committed.
  // Throws Error if the store rejects it.
  void flush();
  // Flushes, stops the writer and sets the final status. Idempotent.
  void end(RunStatus status = RunStatus::kFinished);

  // A copy of the writer's counters.
  RecorderStats stats() const;
  // True once a flush found the run gone from the store (deleted while it
  // was running): from then on nothing is recorded, flush() throws
  // Error(kNotFound) saying so, and end() sets no status.
  bool deleted() const;
  // True once a write found that this process lost the run's lease (see
  // above): nothing more is recorded.
  bool lease_lost() const;
  // Throws what stopped the recording, if anything did: Error(kNotFound)
  // for a deleted run, LeaseLost for a lost lease. A training loop calls it
  // to stop at once rather than train on without a record.
  void check() const;
  // The store it writes to; valid while the recorder is.
  Store& store() { return *store_; }

 private:
  struct Pending {
    uint32_t key;
    MetricPoint point;
  };

  RunRecorder(std::shared_ptr<Store> store, RunInfo info, RecorderOptions options);
  void writer_loop();
  // Moves the buffer into the store. Called on the writer thread only.
  bool flush_once();
  void set_final_status(RunStatus status);
  // Writes the buffered records; on failure puts them back. Writer thread.
  bool flush_records();
  // After a failed write: whether the run is gone; if so drops the buffers.
  bool check_deleted();
  // After a write found the lease lost: reports it once, drops the buffers.
  void lose_lease(const LeaseLost& e);
  // Runs a write-through call, noting a lost lease before rethrowing.
  template <typename F>
  auto write_through(F&& f) -> decltype(f());

  std::shared_ptr<Store> store_;
  RunInfo info_;
  RecorderOptions options_;
  int uncaught_at_start_;
  bool discard_ = false;  // unrecorded(): set before the recorder is handed out

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable wake_;
  std::condition_variable flushed_;
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, KeyHash, std::equal_to<>> key_ids_;
  std::vector<std::string> keys_;
  std::vector<Pending> buffer_;
  std::vector<std::pair<std::string, Record>> records_;  // (kind, record), in order
  int64_t flush_requests_ = 0;
  int64_t flush_done_ = 0;
  bool stopping_ = false;
  bool ended_ = false;
  bool deleted_ = false;
  std::string lease_lost_;  // the LeaseLost message; empty while the lease holds
  RecorderStats stats_;

  std::thread writer_;
};

}  // namespace trainscope::store
