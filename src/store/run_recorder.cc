#include "trainscope/store/run_recorder.h"

#include <array>
#include <exception>
#include <functional>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"

namespace trainscope::store {
using core::ErrorKind;
using core::fail;
using core::log_debug;
using core::log_line;
using core::monotonic_now;
using core::short_uuid;
using core::unix_now;
using core::Verbosity;

std::unique_ptr<RunRecorder> RunRecorder::start(std::shared_ptr<Store> store, const NewRun& run,
                                                RecorderOptions options) {
  // Whatever the entry point, a run's name and experiment follow one rule
  // (accept.h); entry points that know the argument's name check it first.
  auto why = experiment_problem("experiment", run.experiment);
  if (!why) why = run_name_problem("run name", run.name);
  if (why) fail(ErrorKind::kUsage, "{}", *why);
  NewRun r = run;
  r.status = RunStatus::kRunning;
  RunInfo info = store->create_run(r);
  return std::unique_ptr<RunRecorder>(new RunRecorder(std::move(store), std::move(info), options));
}

std::unique_ptr<RunRecorder> RunRecorder::attach(std::shared_ptr<Store> store,
                                                 std::string_view uuid, RecorderOptions options) {
  auto info = store->find_run(uuid);
  if (!info) fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", uuid, store->describe());
  store->set_status(uuid, RunStatus::kRunning);
  info->status = RunStatus::kRunning;
  return std::unique_ptr<RunRecorder>(new RunRecorder(std::move(store), std::move(*info), options));
}

std::unique_ptr<RunRecorder> RunRecorder::unrecorded(const NewRun& run) {
  auto r = start(Store::open({.uri = "sqlite::memory:"}), run);
  r->discard_ = true;  // before anyone else holds it
  return r;
}

RunRecorder::RunRecorder(std::shared_ptr<Store> store, RunInfo info, RecorderOptions options)
    : store_(std::move(store)),
      info_(std::move(info)),
      options_(options),
      uncaught_at_start_(std::uncaught_exceptions()) {
  buffer_.reserve(1 << 16);
  writer_ = std::thread([this] { writer_loop(); });
}

RunRecorder::~RunRecorder() {
  RunStatus status =
      std::uncaught_exceptions() > uncaught_at_start_ ? RunStatus::kFailed : RunStatus::kFinished;
  try {
    end(status);
  } catch (const LeaseLost&) {
    // Reported when it was found.
  } catch (const std::exception& e) {
    log_line(Verbosity::kQuiet,
             fmt::format("trainscope: closing run {}: {}", info_.uuid, e.what()));
  }
}

void RunRecorder::log_metric(std::string_view key, double value, int64_t step) {
  log_metric(key, value, step, unix_now());
}

void RunRecorder::log_metric(std::string_view key, double value, int64_t step, double wall_time) {
  if (discard_) return;
  std::lock_guard lock(mu_);
  if (deleted_ || !lease_lost_.empty()) return;
  auto it = key_ids_.find(key);
  uint32_t id;
  if (it == key_ids_.end()) {
    id = static_cast<uint32_t>(keys_.size());
    keys_.emplace_back(key);
    key_ids_.emplace(keys_.back(), id);
  } else {
    id = it->second;
  }
  buffer_.push_back(Pending{id, MetricPoint{step, wall_time, value}});
  ++stats_.points_logged;
}

void RunRecorder::log_record(std::string_view kind, Record record) {
  check_record_kind(kind);
  // Refused now, naming it, rather than at a flush that fails the run.
  if (auto why = record_problem(kind, record.key, record.step))
    throw core::Error(*why, core::ErrorKind::kUsage);
  if (discard_) return;
  std::lock_guard lock(mu_);
  if (deleted_ || !lease_lost_.empty()) return;
  records_.emplace_back(std::string(kind), std::move(record));
}

bool RunRecorder::flush_records() {
  std::vector<std::pair<std::string, Record>> taken;
  {
    std::lock_guard lock(mu_);
    if (records_.empty()) return true;
    taken.swap(records_);
  }
  try {
    // One append per kind, each kind's records in the order logged. A
    // retry after a failure may write some again: the first is kept.
    std::map<std::string, std::vector<Record>> by_kind;
    for (const auto& [kind, r] : taken) by_kind[kind].push_back(r);
    for (const auto& [kind, records] : by_kind) store_->append_records(info_.uuid, kind, records);
    return true;
  } catch (const LeaseLost& e) {
    lose_lease(e);
    return true;
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    taken.insert(taken.end(), std::make_move_iterator(records_.begin()),
                 std::make_move_iterator(records_.end()));
    records_.swap(taken);
    ++stats_.failed_flushes;
    if (stats_.last_error != e.what())
      log_line(Verbosity::kQuiet, fmt::format("trainscope: cannot write records of run {} (kept "
                                              "in memory, will retry): {}",
                                              short_uuid(info_.uuid), e.what()));
    stats_.last_error = e.what();
    return false;
  }
}

template <typename F>
auto RunRecorder::write_through(F&& f) -> decltype(f()) {
  check();
  try {
    return f();
  } catch (const LeaseLost& e) {
    lose_lease(e);
    throw;
  }
}

void RunRecorder::set_environment(const std::map<std::string, std::string>& entries) {
  write_through([&] { store_->set_environment(info_.uuid, entries); });
}

void RunRecorder::set_param(std::string_view key, std::string_view value) {
  write_through([&] { store_->set_param(info_.uuid, key, value); });
}

void RunRecorder::set_params(const std::map<std::string, std::string>& params) {
  write_through([&] { store_->set_params(info_.uuid, params); });
}

void RunRecorder::set_tag(std::string_view key, std::string_view value) {
  write_through([&] { store_->set_tag(info_.uuid, key, value); });
}

ArtifactInfo RunRecorder::add_artifact(const std::filesystem::path& file, std::string_view kind,
                                       std::string_view name) {
  return write_through([&] { return store_->add_artifact(info_.uuid, file, kind, name); });
}

ArtifactInfo RunRecorder::write_artifact(std::string_view name, std::string_view kind,
                                         const std::function<void(std::ostream&)>& body) {
  return write_through([&] { return store_->write_artifact(info_.uuid, name, kind, body); });
}

bool RunRecorder::deleted() const {
  std::lock_guard lock(mu_);
  return deleted_;
}

bool RunRecorder::lease_lost() const {
  std::lock_guard lock(mu_);
  return !lease_lost_.empty();
}

void RunRecorder::check() const {
  std::lock_guard lock(mu_);
  if (deleted_)
    fail(ErrorKind::kNotFound, "run {} was deleted from {} while it was running",
         core::short_uuid(info_.uuid), store_->describe());
  if (!lease_lost_.empty()) throw LeaseLost(lease_lost_, ErrorKind::kConflict);
}

void RunRecorder::lose_lease(const LeaseLost& e) {
  std::lock_guard lock(mu_);
  if (lease_lost_.empty()) log_line(Verbosity::kQuiet, fmt::format("trainscope: {}", e.what()));
  lease_lost_ = e.what();
  buffer_.clear();
  records_.clear();
}

bool RunRecorder::check_deleted() {
  bool gone = false;
  try {
    gone = !store_->find_run(info_.uuid);
  } catch (const std::exception&) {
    return false;  // the store itself is failing: keep the points and retry
  }
  if (!gone) return false;
  std::lock_guard lock(mu_);
  if (!deleted_)
    log_line(Verbosity::kQuiet,
             fmt::format("trainscope: run {} was deleted from {} while it was running; nothing "
                         "more of it is recorded",
                         core::short_uuid(info_.uuid), store_->describe()));
  deleted_ = true;
  buffer_.clear();
  records_.clear();
  return true;
}

bool RunRecorder::flush_once() {
  std::vector<Pending> taken;
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    if (buffer_.empty()) return true;
    taken.swap(buffer_);
    buffer_.reserve(taken.capacity());
    keys = keys_;
  }
  try {
    // Built here, so that running out of memory keeps the points too.
    std::vector<MetricSeries> batch(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) batch[i].key = keys[i];
    for (const auto& p : taken) batch[p.key].points.push_back(p.point);
    store_->append_metrics(info_.uuid, batch);
  } catch (const LeaseLost& e) {
    lose_lease(e);
    return true;
  } catch (const std::exception& e) {
    if (check_deleted()) return true;
    std::lock_guard lock(mu_);
    // Keep the points, in order, ahead of anything logged meanwhile.
    taken.insert(taken.end(), buffer_.begin(), buffer_.end());
    buffer_.swap(taken);
    ++stats_.failed_flushes;
    if (stats_.last_error != e.what())
      log_line(Verbosity::kQuiet,
               fmt::format("trainscope: cannot write metrics of run {} ({} points kept in "
                           "memory, will retry): {}",
                           short_uuid(info_.uuid), buffer_.size(), e.what()));
    stats_.last_error = e.what();
    return false;
  }
  std::lock_guard lock(mu_);
  stats_.points_flushed += static_cast<int64_t>(taken.size());
  ++stats_.flushes;
  stats_.last_error.clear();
  return true;
}

void RunRecorder::writer_loop() {
  double last_heartbeat = monotonic_now();
  const double hb_interval = static_cast<double>(options_.heartbeat_interval.count()) / 1000.0;
  // A run that records beats at least every second: the heartbeat is when a
  // killed run ended, and a run killed before its first 5 s beat was 0.0 s.
  const double hb_while_recording = std::min(hb_interval, 1.0);
  for (;;) {
    int64_t request;
    bool stop;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.flush_interval,
                     [&] { return stopping_ || flush_requests_ > flush_done_; });
      request = flush_requests_;
      stop = stopping_;
    }
    const int64_t flushes = stats().flushes;
    try {
      if (flush_once()) flush_records();
    } catch (const std::exception& e) {  // out of memory, say: retried, never fatal
      std::lock_guard lock(mu_);
      ++stats_.failed_flushes;
      if (stats_.last_error != e.what())
        log_line(Verbosity::kQuiet, fmt::format("trainscope: cannot write run {} (kept in "
                                                "memory, will retry): {}",
                                                core::short_uuid(info_.uuid), e.what()));
      stats_.last_error = e.what();
    }
    const bool recorded = stats().flushes > flushes;
    if (monotonic_now() - last_heartbeat >= (recorded ? hb_while_recording : hb_interval)) {
      try {
        if (!lease_lost()) store_->heartbeat(info_.uuid);
        last_heartbeat = monotonic_now();
      } catch (const LeaseLost& e) {
        lose_lease(e);
      } catch (const std::exception& e) {
        log_debug("heartbeat of run {} failed: {}", info_.uuid, e.what());
      }
    }
    {
      std::lock_guard lock(mu_);
      flush_done_ = std::max(flush_done_, request);
    }
    flushed_.notify_all();
    if (stop) return;
  }
}

void RunRecorder::flush() {
  std::unique_lock lock(mu_);
  if (ended_) return;
  int64_t mine = ++flush_requests_;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return flush_done_ >= mine; });
  if (deleted_)
    fail(ErrorKind::kNotFound, "run {} was deleted from {} while it was running",
         core::short_uuid(info_.uuid), store_->describe());
  if (!lease_lost_.empty()) throw LeaseLost(lease_lost_, ErrorKind::kConflict);
  if (!stats_.last_error.empty())
    fail(ErrorKind::kStore, "run {}: {} points not yet written: {}", core::short_uuid(info_.uuid),
         buffer_.size(), stats_.last_error);
}

void RunRecorder::end(RunStatus status) {
  {
    std::lock_guard lock(mu_);
    if (ended_) return;
    ended_ = true;
    stopping_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  // The writer's last flush may have failed (disk full); try a few more times
  // before giving up, so a transient error does not lose the tail.
  bool written = false;
  for (int attempt = 0; attempt < 5 && !(written = flush_once() && flush_records()); ++attempt)
    std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
  // Still not: the store's log emptied into its database (past `ulimit -f`
  // the log is what grew), and the points tried again; the reserve is
  // kept for the status (thirty-fourth hunt, A-D).
  if (!written && !deleted() && !lease_lost() && store_->shrink_log()) {
    flush_once();
    flush_records();
  }
  if (deleted()) return;      // no run left to give a status
  if (lease_lost()) check();  // the run is someone else's: no status from here
  size_t lost;
  std::string err;
  {
    std::lock_guard lock(mu_);
    lost = buffer_.size() + records_.size();
    err = stats_.last_error;
  }
  if (lost > 0) status = RunStatus::kFailed;
  try {
    set_final_status(status);
  } catch (const LeaseLost& e) {
    lose_lease(e);
    throw;
  }
  if (lost > 0)
    fail(ErrorKind::kStore, "run {}: {} metric points could not be written: {}",
         core::short_uuid(info_.uuid), lost, err);
}

// On a full disk, or past the file size limit, even the status update may
// not fit: the store's reserve is freed and its log emptied for it, so the
// run ends "failed" rather than being found "killed" later.
void RunRecorder::set_final_status(RunStatus status) {
  // The ways to make room, in order: the reserve (a full disk), then the
  // log emptied into the database (past the file size limit; on a full
  // disk the checkpoint would take the reserve's room, so it comes second).
  const std::array<std::function<bool()>, 2> room = {[this] { return store_->release_reserve(); },
                                                     [this] { return store_->shrink_log(); }};
  for (size_t i = 0;; ++i) {
    try {
      store_->set_status(info_.uuid, status);
      break;
    } catch (const core::Error& e) {
      if (e.kind() != ErrorKind::kStore) throw;
      while (i < room.size() && !room[i]()) ++i;
      if (i >= room.size()) throw;
      log_line(Verbosity::kQuiet,
               fmt::format("trainscope: the store could not grow (a full disk, or the file size "
                           "limit); made room to record run {} as {}",
                           core::short_uuid(info_.uuid), to_string(status)));
    }
  }
  info_.status = status;
}

RecorderStats RunRecorder::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace trainscope::store
