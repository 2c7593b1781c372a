// The backend-neutral half of Store: run references, the stale-run reaper
// and artifact bookkeeping, written once over the backend primitives.
#include "trainscope/store/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

#include "backends.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/core/version.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/artifact_store.h"
#include "trainscope/store/import.h"
#include "trainscope/store/registry.h"

namespace fs = std::filesystem;

namespace trainscope::store {
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using core::short_uuid;

namespace {
constexpr const char* kStatusNames[] = {"created", "running", "finished",
                                        "failed",  "killed",  "stopped"};
constexpr const char* kDefaultStore = "sqlite:./trainscope.db";
// resolve_run lists at most this many candidates of an ambiguous reference.
constexpr int64_t kMaxCandidates = 10;

bool is_uuid_prefix(std::string_view ref) {
  if (ref.empty() || ref.size() > 36) return false;
  for (char c : ref)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  return true;
}

// Rejects artifact names that would escape the run's folder.
std::string checked_artifact_name(std::string_view name) {
  if (auto why = artifact_name_problem(name))
    fail(ErrorKind::kUsage, "artifact name '{}' {}; {}", shown_key(name), *why, kArtifactNameRule);
  return fs::path(name).lexically_normal().string();
}

[[noreturn]] void fail_ambiguous(std::string_view ref, const std::vector<RunInfo>& found) {
  std::string list;
  for (size_t i = 0; i < found.size() && i < static_cast<size_t>(kMaxCandidates); ++i) {
    if (i) list += ", ";
    list += fmt::format("{} ({}, {})", short_uuid(found[i].uuid),
                        found[i].name.empty() ? "unnamed" : escape_for_display(found[i].name),
                        to_string(found[i].status));
  }
  const bool more = found.size() > static_cast<size_t>(kMaxCandidates);
  fail(ErrorKind::kConflict, "'{}' is ambiguous: it matches {}{} runs: {}; give more of the UUID",
       escape_for_display(ref), more ? "more than " : "",
       std::min<size_t>(found.size(), kMaxCandidates), list);
}

// The start of `uuid` up to a dash (or the whole) longer than `than`
// characters: a reference that is not the name (a name of 8 hex digits
// was told to use those same 8; twenty-sixth hunt, B-D1).
std::string longer_than(std::string_view uuid, size_t than) {
  for (size_t n : {8, 13, 18, 23})
    if (n > than) return std::string(uuid.substr(0, n));
  return std::string(uuid);
}

// The note when a run's name is also the start of other runs' UUIDs.
void note_name_won(std::string_view ref, const RunInfo& named, const std::vector<RunInfo>& others) {
  std::string list;
  for (size_t i = 0; i < others.size() && i < 3; ++i)
    list += (i ? ", " : "") + short_uuid(others[i].uuid);
  if (others.size() > 3) list += ", ...";
  core::log_info(
      "note: '{}' is the name of run {}; {} whose UUID starts with '{}' ({}) {} named by more of "
      "its UUID, e.g. '{}'",
      escape_for_display(ref), short_uuid(named.uuid),
      others.size() == 1
          ? std::string("the run")
          : fmt::format("{}{} runs", std::ssize(others) > kMaxCandidates ? "more than " : "",
                        std::min<int64_t>(std::ssize(others), kMaxCandidates)),
      escape_for_display(ref), list, others.size() == 1 ? "is" : "are",
      longer_than(others[0].uuid, ref.size()));
}

}  // namespace

const char* to_string(RunStatus s) { return kStatusNames[static_cast<int>(s)]; }

namespace {

// The status named `name`, if one is.
std::optional<RunStatus> status_named(std::string_view name) {
  for (int i = 0; i < 6; ++i)
    if (name == kStatusNames[i]) return static_cast<RunStatus>(i);
  return std::nullopt;
}

}  // namespace

RunStatus parse_run_status(std::string_view s) {
  if (auto status = status_named(s)) return *status;
  fail(ErrorKind::kUsage,
       "unknown run status '{}'; valid: created, running, finished, failed, killed, stopped",
       escape_for_display(s));
}

RunStatus stored_run_status(std::string_view name, std::string_view uuid) {
  if (auto status = status_named(name)) return *status;
  fail(ErrorKind::kStore,
       "run {}: its stored status '{}' is none of created, running, finished, failed, killed, "
       "stopped; the store is damaged",
       short_uuid(uuid), escape_for_display(name));
}

// Lower case only: every writer stores it so and the resolver looks it up
// so; an upper-case one listed a run no reference reached, and its
// lower-case twin opened in its place (twenty-fifth hunt, A-D4).
bool is_stored_uuid(std::string_view s) {
  bool ok = s.size() == 36;
  for (size_t i = 0; ok && i < s.size(); ++i)
    ok = i == 8 || i == 13 || i == 18 || i == 23
             ? s[i] == '-'
             : std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] >= 'a' && s[i] <= 'f');
  return ok;
}

std::string stored_uuid(std::string uuid, const char* what) {
  if (is_stored_uuid(uuid)) return uuid;
  fail(ErrorKind::kStore, "{} '{}' is not a UUID; the store is damaged", what,
       core::escape_cut(uuid, 64));
}

ArtifactInfo stored_artifact(ArtifactInfo a, std::string_view uuid) {
  if (core::is_sha256_hex(a.sha256)) return a;
  fail(ErrorKind::kStore,
       "artifact '{}' of run {}: its stored SHA-256 '{}' is not a SHA-256; the store is damaged",
       core::escape_cut(a.name, 120), short_uuid(uuid), core::escape_cut(a.sha256, 80));
}

int64_t stored_pid(int64_t pid, std::string_view uuid) {
  if (pid >= 0 && pid <= std::numeric_limits<int32_t>::max()) return pid;
  fail(ErrorKind::kStore,
       "run {}: its stored pid is {}, which no process has; the store is damaged", short_uuid(uuid),
       pid);
}

std::string stored_experiment(bool found, std::string name, std::string_view uuid) {
  if (found) return name;
  fail(ErrorKind::kStore,
       "run {}: its stored experiment is none the store holds; the store is damaged",
       short_uuid(uuid));
}

std::string next_free_name(const std::string& base, const std::vector<std::string>& taken) {
  bool base_taken = false;
  int64_t highest = 1;
  for (const auto& t : taken) {
    if (t == base) base_taken = true;
    if (t.size() <= base.size() + 1 || t.compare(0, base.size(), base) != 0 ||
        t[base.size()] != '-')
      continue;
    const std::string tail = t.substr(base.size() + 1);
    if (tail.size() > 9 || tail.find_first_not_of("0123456789") != std::string::npos) continue;
    highest = std::max<int64_t>(highest, std::stoll(tail));
  }
  if (!base_taken) return base;
  return base + "-" + std::to_string(highest + 1);
}

bool is_terminal(RunStatus s) { return s != RunStatus::kCreated && s != RunStatus::kRunning; }

std::string default_store_uri() {
  const char* env = std::getenv("TRAINSCOPE_STORE");
  if (env && *env) return env;
  return kDefaultStore;
}

Store::Store(std::unique_ptr<ArtifactStore> artifacts, StoreOptions options)
    : artifacts_(std::move(artifacts)), options_(std::move(options)) {}

Store::~Store() = default;

std::unique_ptr<Store> Store::open(const StoreOptions& options) {
  StoreOptions o = options;
  if (o.uri.empty()) o.uri = default_store_uri();
  std::unique_ptr<Store> store = open_backend(o);
  if (!o.read_only && o.reap) store->reap_stale_runs();
  return store;
}

// --- run references -------------------------------------------------------------

RunInfo Store::resolve_run(std::string_view ref) {
  if (ref.empty()) fail(ErrorKind::kUsage, "empty run reference; give a UUID prefix or a run name");
  // UUIDs are stored in lowercase; a prefix may be given in any case.
  std::string lower(ref);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto exact = find_run(lower)) return *exact;
  auto first = [&](RunFilter f) {
    f.limit = kMaxCandidates + 1;
    return list_runs(f);
  };
  const std::vector<RunInfo> named = first({.name = std::string(ref)});
  std::vector<RunInfo> prefixed;
  if (is_uuid_prefix(lower)) prefixed = first({.uuid_prefix = lower});
  // An exact name wins over a UUID prefix, as a git ref wins over an
  // abbreviated hash; the runs the prefix would also name are told apart.
  if (named.size() == 1) {
    std::erase_if(prefixed, [&](const RunInfo& r) { return r.uuid == named[0].uuid; });
    if (!prefixed.empty()) note_name_won(ref, named[0], prefixed);
    return *find_run(named[0].uuid);  // list_runs leaves out the command line and config
  }
  std::vector<RunInfo> found = named;
  for (auto& r : prefixed)
    if (std::none_of(found.begin(), found.end(), [&](auto& f) { return f.uuid == r.uuid; }))
      found.push_back(std::move(r));
  if (found.empty())
    fail(ErrorKind::kNotFound,
         "no run matches '{}' in {}; give a full UUID, a unique UUID prefix or a run name",
         escape_for_display(ref), describe());
  if (found.size() > 1) fail_ambiguous(ref, found);
  return *find_run(found.front().uuid);
}

std::vector<RunInfo> Store::resolve_runs(const std::vector<std::string>& refs) {
  std::vector<RunInfo> out;
  std::set<std::string> seen, given;
  for (const auto& ref : refs) {
    if (!given.insert(ref).second) continue;  // resolved (and noted) once
    RunInfo r = resolve_run(ref);
    if (seen.insert(r.uuid).second) out.push_back(std::move(r));
  }
  return out;
}

// --- the stale-run reaper and the lease -------------------------------------------

LeaseLost::~LeaseLost() = default;

WriterIdentity this_process() {
  const int64_t pid = getpid();
  return {core::host_name(), pid, core::process_start_ticks(pid)};
}

WriterIdentity Store::writer() const { return options_.writer ? *options_.writer : this_process(); }

double Store::now() { return core::unix_now(); }

void Store::check_schema() {
  const int version = schema_version();
  if (version > latest_schema_version())
    fail(ErrorKind::kStore,
         "store '{}' has schema version {}, newer than this trainscope ({}, schema {}); "
         "upgrade trainscope, the store was not modified",
         describe(), version, core::version(), latest_schema_version());
}

namespace {

// Whether a run still "running" has lost its writer by `now` (see
// reap_stale_runs).
// How far ahead of the judging clock a heartbeat may be (another host's
// clock, on a shared SQLite file) before it is no heartbeat at all: one
// from the future would otherwise keep a dead run "running" for good.
constexpr double kHeartbeatAheadLimit = 600;

bool writer_gone(const RunInfo& r, const std::string& host, double now, double stale_after) {
  if (r.host == host && r.pid > 0 && r.pid_start > 0)
    return !core::process_alive(r.pid, r.pid_start);
  return now - r.heartbeat > stale_after || r.heartbeat - now > kHeartbeatAheadLimit;
}

}  // namespace

Liveness liveness(const RunInfo& run, double now, double stale_after_seconds) {
  if (run.status != RunStatus::kRunning ||
      !writer_gone(run, core::host_name(), now, stale_after_seconds))
    return {to_string(run.status), {}};
  std::string note = run.heartbeat > 0 ? "no heartbeat since " + core::format_utc(run.heartbeat)
                                       : std::string("no heartbeat recorded");
  if (run.heartbeat - now > kHeartbeatAheadLimit)  // a year 10000 or later is no time: years
    note = is_a_time(run.heartbeat)
               ? fmt::format("its heartbeat {} is {:.0f} s ahead of this machine's clock",
                             core::format_utc(run.heartbeat), run.heartbeat - now)
               : "its heartbeat is no time (past the year 9999)";
  if (run.host == core::host_name() && run.pid > 0 && run.pid_start > 0)
    note += fmt::format(" (its process, pid {}, has ended)", run.pid);
  else
    note += fmt::format(" (written by pid {} on {})", run.pid, escape_for_display(run.host));
  return {"stale", note};
}

Liveness Store::liveness(const RunInfo& run, double now) const {
  return store::liveness(run, now, options_.stale_after_seconds);
}

int Store::reap_stale_runs() { return options_.read_only ? 0 : reap_stale_runs(now()); }

int Store::reap_stale_runs(double now) {
  if (options_.read_only) return 0;  // a reader never writes
  // This machine's processes are what the PID check can see.
  const std::string host = core::host_name();
  int n = 0;
  for (const auto& r : list_runs({.status = RunStatus::kRunning}))
    if (writer_gone(r, host, now, options_.stale_after_seconds) && mark_killed(r)) ++n;
  if (n > 0) core::log_info("store: marked {} run(s) killed (their process is gone or silent)", n);
  return n;
}

void Store::set_status(std::string_view uuid, RunStatus status) {
  if (status != RunStatus::kRunning) {
    write_status(uuid, status);
    end_lease(uuid);
    return;
  }
  // A writer that is gone gives the run up first; a live one keeps it.
  if (auto r = find_run(uuid); r && r->status == RunStatus::kRunning) {
    const double t = now();
    if (writer_gone(*r, core::host_name(), t, options_.stale_after_seconds)) mark_killed(*r);
  }
  claim_run(uuid);
  hold_lease(uuid);
}

void Store::hold_lease(std::string_view uuid) {
  std::lock_guard lock(leases_mu_);
  leases_.insert_or_assign(std::string(uuid), writer());
}

void Store::end_lease(std::string_view uuid) {
  std::lock_guard lock(leases_mu_);
  if (auto it = leases_.find(uuid); it != leases_.end()) leases_.erase(it);
}

std::optional<WriterIdentity> Store::lease(std::string_view uuid) const {
  std::lock_guard lock(leases_mu_);
  if (auto it = leases_.find(uuid); it != leases_.end()) return it->second;
  return std::nullopt;
}

void Store::check_lease(std::string_view uuid, RunStatus status, const WriterIdentity& current) {
  const auto held = lease(uuid);
  if (!held || (status == RunStatus::kRunning && current == *held)) return;
  const std::string id = short_uuid(uuid);
  if (status == RunStatus::kRunning)
    throw LeaseLost(fmt::format("run {} was taken over by pid {} on {} while this process (pid {} "
                                "on {}) was silent; it records nothing more of the run",
                                id, current.pid, escape_for_display(current.host), held->pid,
                                escape_for_display(held->host)),
                    ErrorKind::kConflict);
  throw LeaseLost(fmt::format("run {} was marked {} while this process (pid {} on {}) was silent; "
                              "it records nothing more of the run; resume it with --resume {}",
                              id, to_string(status), held->pid, escape_for_display(held->host), id),
                  ErrorKind::kConflict);
}

void Store::fail_claim(std::string_view uuid, const WriterIdentity& current, double heartbeat) {
  const std::string id = short_uuid(uuid);
  const bool here = current.host == core::host_name();
  fail(ErrorKind::kConflict,
       "run {} is still running: pid {} on {} writes it (last heartbeat {} ago); {}", id,
       current.pid, escape_for_display(current.host),
       core::format_duration(std::max(0.0, now() - heartbeat)),
       here ? fmt::format("stop that process first (a paused one goes on with 'kill -CONT {}')",
                          current.pid)
            : fmt::format("stop it there, or wait until it has been silent for {} s",
                          options_.stale_after_seconds));
}

void Store::check_lease_now(std::string_view uuid) {
  if (!lease(uuid)) return;
  if (auto r = find_run(uuid)) check_lease(uuid, r->status, {r->host, r->pid, r->pid_start});
}

size_t Store::delete_run(std::string_view uuid, ChildRuns children) {
  auto kids = list_runs({.parent_uuid = std::string(uuid)});
  if (!kids.empty() && children == ChildRuns::kRefuse)
    fail(ErrorKind::kConflict,
         "run {} has {} child run{}; deleting it alone would orphan them: delete them too, or keep "
         "them detached",
         short_uuid(uuid), kids.size(), kids.size() == 1 ? "" : "s");
  // Its descendants, breadth first, each once: a chain of any depth, and
  // runs a damaged store made each other's parents, end in a list, never
  // in a recursion without bound. The deepest go first.
  std::vector<std::string> doomed{std::string(uuid)};
  if (children == ChildRuns::kDelete) {
    std::set<std::string> seen{std::string(uuid)};
    for (size_t i = 0; i < doomed.size(); ++i) {
      const auto below = i == 0 ? kids : list_runs({.parent_uuid = std::string(doomed[i])});
      for (const auto& k : below)
        if (seen.insert(k.uuid).second) doomed.push_back(k.uuid);
    }
  }
  for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
    erase_run(*it);  // children left are detached (parent_id ON DELETE SET NULL)
    try {
      artifacts_->remove_run(*it);
    } catch (const core::Error& e) {
      core::log_warn("could not remove artifacts of run {}: {}", *it, e.what());
    }
  }
  return children == ChildRuns::kDelete ? doomed.size() - 1 : kids.size();
}

// --- artifacts ------------------------------------------------------------------

ArtifactInfo Store::add_artifact(std::string_view uuid, const fs::path& file, std::string_view kind,
                                 std::string_view name) {
  // Without a name: the file's ("dir/" names "dir", which put() then
  // refuses as a folder; no name the caller did not give is blamed).
  const fs::path last = file.has_filename() ? file.filename() : file.parent_path().filename();
  std::string rel = checked_artifact_name(name.empty() ? last.string() : name);
  check_kind_name("artifact", kind);
  check_lease_now(uuid);
  if (!find_run(uuid))
    fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid), describe());
  if (auto existing = find_artifact(uuid, rel)) {
    // Only the content decides; the file is not copied again.
    if (existing->sha256 != core::sha256_file(file))
      fail(ErrorKind::kConflict,
           "run {} already has an artifact '{}' with different content; choose another name",
           short_uuid(uuid), rel);
    existing->path = artifacts_->path(uuid, rel);
    return *existing;
  }
  return record_artifact(uuid, rel, kind, artifacts_->put(uuid, rel, file));
}

ArtifactInfo Store::write_artifact(std::string_view uuid, std::string_view name,
                                   std::string_view kind,
                                   const std::function<void(std::ostream&)>& body) {
  std::string rel = checked_artifact_name(name);
  check_kind_name("artifact", kind);
  if (!find_run(uuid))
    fail(ErrorKind::kNotFound, "no run with UUID '{}' in {}", escape_for_display(uuid), describe());
  StagedFile staged = artifacts_->stage(uuid, rel, body);
  try {
    check_lease_now(uuid);  // the file goes in only while the run is ours
  } catch (...) {
    artifacts_->discard(staged);
    throw;
  }
  if (auto existing = find_artifact(uuid, rel)) {
    artifacts_->discard(staged);
    if (existing->sha256 != staged.file.sha256)
      fail(ErrorKind::kConflict,
           "run {} already has an artifact '{}' with different content; choose another name",
           short_uuid(uuid), rel);
    existing->path = artifacts_->path(uuid, rel);
    return *existing;
  }
  return record_artifact(uuid, rel, kind, artifacts_->commit(staged));
}

ArtifactInfo Store::record_artifact(std::string_view uuid, const std::string& rel,
                                    std::string_view kind, const StoredFile& stored) {
  ArtifactInfo info{rel, std::string(kind), stored.sha256, stored.size, core::unix_now(), {}};
  ArtifactInfo recorded = insert_artifact(uuid, info);
  if (recorded.sha256 != info.sha256)
    fail(ErrorKind::kConflict, "run {}: another writer recorded artifact '{}' with other content",
         short_uuid(uuid), rel);
  recorded.path = stored.path;
  return recorded;
}

std::map<std::string, RunFields> Store::run_fields(const std::vector<std::string>& uuids,
                                                   bool params, bool tags, bool metrics) {
  std::map<std::string, RunFields> out;
  for (const auto& u : uuids) {
    RunFields& f = out[u];
    if (params) f.params = this->params(u);
    if (tags) f.tags = this->tags(u);
    if (metrics) f.metrics = metric_summaries(u);
  }
  return out;
}

void Store::import_run(const RunInfo& run) {
  fail(ErrorKind::kUsage, "{} cannot import runs from another store", describe());
}

void import_whole(Store& store, const RunInfo& run, const std::function<void()>& fill) {
  store.import_run(run);
  try {
    fill();
  } catch (...) {
    try {
      store.delete_run(run.uuid);
    } catch (const std::exception& e) {
      core::log_warn("could not remove the partial run {}: {}", short_uuid(run.uuid), e.what());
    }
    throw;
  }
}

std::vector<MetricPoint> Store::metric_from(std::string_view uuid, std::string_view key,
                                            int64_t first) {
  auto all = metric(uuid, key);
  const auto skip = static_cast<size_t>(std::clamp<int64_t>(first, 0, std::ssize(all)));
  all.erase(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(skip));
  return all;
}

void Store::scan_metric(std::string_view uuid, std::string_view key, int64_t first,
                        const std::function<bool(const std::vector<MetricPoint>&)>& each) {
  const auto all = metric_from(uuid, key, first);
  if (!all.empty()) each(all);
}

void check_record_kind(std::string_view kind) { check_kind_name("record", kind); }

void check_kind_name(std::string_view what, std::string_view kind) {
  const bool named =
      !kind.empty() && kind.size() <= kMaxRecordKindBytes && kind[0] >= 'a' && kind[0] <= 'z' &&
      std::all_of(kind.begin(), kind.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
      });
  if (!named)
    fail(ErrorKind::kUsage,
         "{} kind '{}' is not a kind name: give 1 to {} bytes of a-z, 0-9, '_', '.' and '-', "
         "starting with a letter",
         what, escape_for_display(kind), kMaxRecordKindBytes);
}

int64_t Store::append_records(std::string_view uuid, std::string_view kind,
                              const std::vector<Record>& records) {
  check_record_kind(kind);
  for (const auto& r : records) {
    if (r.key.size() > kMaxRecordKeyBytes)
      fail(ErrorKind::kUsage,
           "record key '{}...' of kind '{}' is {} bytes, more than the {} a key may have; use a "
           "shorter key",
           core::escape_cut(r.key, 40), kind, r.key.size(), kMaxRecordKeyBytes);
    if (r.payload.size() > kMaxRecordPayloadBytes)
      fail(ErrorKind::kUsage,
           "record '{}' of kind '{}' at step {} has a payload of {} bytes, more than the {} MiB a "
           "record may hold; split it into several records",
           escape_for_display(r.key), kind, r.step, r.payload.size(), kMaxRecordPayloadBytes >> 20);
  }
  if (records.empty()) return 0;
  return insert_records(uuid, kind, records);
}

namespace {
// The RecordSampling that lives on this thread, if any.
thread_local RecordSampling* t_record_sampling = nullptr;
}  // namespace

std::vector<Record> Store::records(std::string_view uuid, std::string_view kind,
                                   std::optional<std::string_view> key) {
  if (RecordSampling* sampling = t_record_sampling;
      sampling && sampling->store_ == this && !key && sampling->kind_ == kind) {
    int64_t count = 0;
    auto out = sample_records(uuid, kind, sampling->most_, count);
    ++sampling->reads_;
    sampling->taken_ += std::ssize(out);
    sampling->count_ = count;
    return out;
  }
  return read_records(uuid, kind, key);
}

std::vector<Record> Store::sample_records(std::string_view uuid, std::string_view kind, size_t most,
                                          int64_t& count) {
  return read_record_sample(uuid, kind, std::max<size_t>(most, 1), count);
}

std::vector<Record> Store::read_record_sample(std::string_view uuid, std::string_view kind,
                                              size_t most, int64_t& count) {
  auto all = read_records(uuid, kind, std::nullopt);
  count = std::ssize(all);
  const auto stride = static_cast<size_t>(sample_stride(count, most));
  if (stride == 1) return all;
  std::vector<Record> out;
  for (size_t i = 0; i < all.size(); i += stride) out.push_back(std::move(all[i]));
  return out;
}

int64_t sample_stride(int64_t count, size_t most) {
  const auto m = static_cast<int64_t>(std::clamp<size_t>(most, 1, size_t{1} << 40));
  return count <= m ? 1 : (count + m - 1) / m;
}

RecordSampling::RecordSampling(const Store& store, std::string_view kind, size_t most)
    : store_(&store), kind_(kind), most_(most) {
  if (t_record_sampling)
    fail(ErrorKind::kUsage, "a record sampling of kind {} is already open on this thread",
         t_record_sampling->kind_);
  t_record_sampling = this;
}

RecordSampling::~RecordSampling() { t_record_sampling = nullptr; }

std::vector<ArtifactInfo> Store::artifacts(std::string_view uuid) {
  std::vector<ArtifactInfo> rows = artifact_rows(uuid);
  for (auto& a : rows) {
    // A size no file has (a damaged store: negative, or past 2^53 bytes,
    // 8 PiB) is not shown as a size.
    if (a.size < 0 || a.size > (int64_t{1} << 53))
      core::fail(core::ErrorKind::kStore,
                 "artifact '{}' of run {}: its size is {}; the store is damaged",
                 core::escape_for_display(a.name), core::short_uuid(uuid), a.size);
    a.path = artifacts_->path(uuid, a.name);
  }
  return rows;
}

void verify_artifact(const ArtifactInfo& a) {
  // What is there first: a FIFO or a device where the file was (a link
  // followed) is not "missing", and file_size() would say so.
  struct stat st {};
  if (::stat(a.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    core::fail(core::ErrorKind::kStore,
               "artifact '{}' ({}) is {}, not a regular file: it was replaced; it cannot be used",
               a.name, a.path.string(), core::file_kind(st.st_mode));
  std::error_code ec;
  auto size = std::filesystem::file_size(a.path, ec);
  if (ec)
    core::fail(core::ErrorKind::kStore, "artifact '{}' of this run is missing ({}): {}", a.name,
               a.path.string(), ec.message());
  if (static_cast<int64_t>(size) != a.size)
    core::fail(core::ErrorKind::kStore,
               "artifact '{}' ({}) is {} bytes but was recorded with {}: it was truncated or "
               "replaced; it cannot be used",
               a.name, a.path.string(), size, a.size);
  if (core::sha256_file(a.path) != a.sha256)
    core::fail(core::ErrorKind::kStore,
               "artifact '{}' ({}) does not match the SHA-256 recorded when it was written: it "
               "is damaged or was replaced; it cannot be used",
               a.name, a.path.string());
}

void verify_config(const RunInfo& run) {
  if (run.config_text.empty() || run.config_hash.empty()) return;
  if (core::sha256_hex(run.config_text) == run.config_hash) return;
  core::fail(core::ErrorKind::kStore,
             "the config recorded with run {} does not match its recorded SHA-256: it was "
             "changed in the store after the run recorded it; it cannot be used",
             core::short_uuid(run.uuid));
}

}  // namespace trainscope::store
