// Running a study's trainings through an executor, with retries and resume.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <map>

#include "job_process.h"
#include "planning.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/cpus.h"
#include "trainscope/store/artifact_store.h"
#include "trainscope/store/query.h"
#include "trainscope/store/registry.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

using core::ErrorKind;
using core::fail;
using store::RunInfo;
using store::RunStatus;

namespace {

std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

// Installs SIGINT/SIGTERM/SIGHUP (a closed terminal) handlers for the
// scheduling loop (no SA_RESTART, so waiting for a child returns on the
// signal) and restores the old ones.
class SignalGuard {
 public:
  SignalGuard() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    sigaction(SIGHUP, &sa, &old_hup_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
};

// What the store says about one planned run.
struct State {
  uint64_t index = 0;  // in the plan
  bool finished = false;
  std::string resume_uuid;  // a stopped or killed child to continue
  // Its newest attempt, still running in another process (a second
  // terminal, a Slurm task): "adam/r1 (pid 123 on host)". It is left alone.
  std::string live;
};

bool superseded(const std::map<std::string, std::string>& tags) {
  return tags.count(kSupersededTag) > 0;
}

// The study's children that a filter selects, oldest first, without the
// attempts a later one superseded; by name.
std::map<std::string, std::vector<RunInfo>> children(store::Store& s, store::RunFilter f) {
  std::map<std::string, std::vector<RunInfo>> out;
  auto runs = s.list_runs(f);
  std::reverse(runs.begin(), runs.end());  // oldest first
  std::vector<std::string> uuids;
  for (const auto& r : runs) uuids.push_back(r.uuid);
  auto fields = s.run_fields(uuids, false, true, false);
  for (auto& r : runs)
    if (!superseded(fields[r.uuid].tags)) out[r.name].push_back(r);
  return out;
}

std::map<std::string, std::vector<RunInfo>> children(store::Store& s, const std::string& study) {
  return children(s, store::RunFilter{.parent_uuid = study});
}

// The attempts of one planned run, oldest first, without superseded ones.
std::vector<RunInfo> attempts(store::Store& s, const std::string& study, const std::string& name) {
  return children(s, store::RunFilter{.parent_uuid = study, .name = name})[name];
}

bool has_checkpoint(store::Store& s, const RunInfo& r) {
  for (const auto& a : s.artifacts(r.uuid))
    if (a.kind == "checkpoint") return true;
  return false;
}

State state_of(store::Store& s, uint64_t index, const std::vector<RunInfo>& runs) {
  State st{index, false, {}, {}};
  for (const auto& r : runs) {
    if (r.status == RunStatus::kFinished) st.finished = true;
  }
  const RunInfo* last = runs.empty() ? nullptr : &runs.back();
  if (!st.finished && last && last->status == RunStatus::kRunning &&
      !s.liveness(*last, s.now()).stale())
    st.live = fmt::format("{} (pid {} on {})", core::escape_for_display(last->name), last->pid,
                          core::escape_for_display(last->host));
  if (!st.finished && last &&
      (last->status == RunStatus::kStopped || last->status == RunStatus::kKilled) &&
      has_checkpoint(s, *last))
    st.resume_uuid = last->uuid;
  return st;
}

// Every attempt of a planned run but the newest is superseded by it, so
// that readers count the planned run once.
void supersede_older_attempts(store::Store& s, const std::string& study, const std::string& name) {
  auto runs = attempts(s, study, name);
  for (size_t i = 0; i + 1 < runs.size(); ++i)
    s.set_tag(runs[i].uuid, kSupersededTag, runs.back().uuid);
}

// How an attempt that recorded no run ended, and what to do about it.
std::string nothing_recorded(const JobEnd& e, bool command) {
  const std::string how = e.signal ? fmt::format("was killed by signal {}", e.signal)
                                   : fmt::format("exited {}", e.exit_code);
  const char* what = command ? "the command" : "the training";
  if (e.signal == 0 && e.exit_code == 2)  // the CLI's usage error: the config or machine refused
    return fmt::format(
        "{} exited 2 (refused as a usage error) before it recorded a run; a retry "
        "would repeat it",
        what);
  if (!e.ok()) return fmt::format("{} {} before it recorded a run", what, how);
  if (!command) return "the training exited 0 but recorded no run";
  return "the command exited 0 but recorded no run; a study's command must record its run "
         "through trainscope: call trainscope.start_run() of the Python package in it, or run "
         "`trainscope train CONFIG`";
}

std::string log_name(const std::string& run_name) {
  std::string n = run_name;
  for (char& c : n)
    if (c == '/' || c == ',' || c == '=' || c == ' ') c = '_';
  return n + ".log";
}

// The config file the trainings of `spec` train: its recorded base, written
// once into `dir` under a name from its hash. A study recorded before plans
// were recorded trains its base file as it is now.
std::filesystem::path base_file(const StudySpec& spec, const std::filesystem::path& dir) {
  if (!spec.command.empty()) return {};  // a command study trains no config file
  if (spec.resolved_base.empty()) {
    core::log_warn(
        "study {} was recorded without its resolved base config: its runs train {} as "
        "it is now",
        spec.name, spec.base.string());
    return spec.base;
  }
  const std::string hash = core::sha256_hex(spec.resolved_base);
  const std::filesystem::path file =
      std::filesystem::absolute(dir / ("plan-base-" + hash.substr(0, 16) + ".yaml"));
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && core::sha256_file(file) == hash) return file;
  core::check_output_folder(dir);  // a folder that cannot be made says why
  std::filesystem::create_directories(dir, ec);
  core::write_file_atomically(file, [&](std::ostream& o) { o << spec.resolved_base; });
  return file;
}

// $PYTHONPATH with its relative entries made absolute (from the folder the
// study runs in): the command starts in the study file's folder.
std::string absolute_pythonpath() {
  const char* v = std::getenv("PYTHONPATH");
  if (!v || !*v) return {};
  std::string out;
  std::string_view rest = v;
  while (true) {
    const size_t colon = rest.find(':');
    const std::string entry(rest.substr(0, colon));  // empty: the current folder
    std::error_code ec;
    std::filesystem::path p =
        entry.empty() ? std::filesystem::path(".") : std::filesystem::path(entry);
    if (p.is_relative()) p = std::filesystem::absolute(p, ec).lexically_normal();
    out += (ec ? entry : p.string());
    if (colon == std::string_view::npos) break;
    out += ':';
    rest.remove_prefix(colon + 1);
  }
  return out;
}

// The job of a command study's run: the command, by /bin/sh in the study
// file's folder, with what the run is in its environment (the trainscope
// package reads it: trainscope.config(), start_run()).
Job command_job(const PlannedRun& p, const StudySpec& spec, const std::string& study,
                const store::UriPassword& store, const std::filesystem::path& log,
                const std::filesystem::path& program) {
  std::string sets;
  for (const auto& line : set_lines(p)) sets += line + "\n";
  Job j{p.name, {"/bin/sh", "-c", "cd \"$TRAINSCOPE_STUDY_DIR\" && exec " + spec.command}, log, {}};
  // The command starts in the study's folder: a relative store path must
  // still name the study's store.
  j.env = {{"TRAINSCOPE_STORE", store::absolute_uri(store.uri)},
           {"TRAINSCOPE_PARENT", study},
           {"TRAINSCOPE_EXPERIMENT", spec.name},
           {"TRAINSCOPE_RUN_NAME", p.name},
           {"TRAINSCOPE_SET", sets},
           {"TRAINSCOPE_PLANNED", command_run_text(spec, p)},
           {"TRAINSCOPE_STUDY_DIR", std::filesystem::absolute(spec.file).parent_path().string()},
           {"OMP_NUM_THREADS", std::to_string(spec.threads_per_run)},
           {"TRAINSCOPE_PROGRAM", program.string()}};
  // `trainscope` in the command is the one running the study.
  const char* search = std::getenv("PATH");
  j.env["PATH"] =
      program.parent_path().string() + (search && *search ? std::string(":") + search : "");
  if (!store.password.empty()) j.env["PGPASSWORD"] = store.password;
  if (auto path = absolute_pythonpath(); !path.empty()) j.env["PYTHONPATH"] = path;
  return j;
}

// The file whose repository a study's trainings record as their code: the
// study file, while it exists (a study resumes with its file moved away;
// its trainings then record their planned config's folder).
std::string code_of(const StudySpec& spec) {
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::absolute(spec.file, ec);
  return !ec && std::filesystem::exists(file, ec) ? file.string() : std::string();
}

// What a worker warms for `spec`: `config` (the base file, or its planned
// copy) with the first planned run's settings, and the study file's code.
Warm warm_of(const StudySpec& spec, const std::string& config) {
  const Plan plan(spec);
  return {config, plan.size() > 0 ? set_lines(plan.at(0)) : std::vector<std::string>{},
          code_of(spec)};
}

Job make_job(const State& st, const Plan& plan, const StudySpec& spec, const StudyOptions& o,
             const std::string& study, const std::filesystem::path& logs,
             const std::filesystem::path& base) {
  const PlannedRun p = plan.at(st.index);
  // A password in the store URI goes in the environment, not on the
  // command line.
  const store::UriPassword store = store::split_password(o.store_uri);
  if (!spec.command.empty())
    return command_job(p, spec, study, store, logs / log_name(p.name), o.program);
  Job j{p.name,
        {o.program.string(), "--store", store.uri, "-q", "train", base.string()},
        logs / log_name(p.name),
        {}};
  if (!store.password.empty()) j.env["PGPASSWORD"] = store.password;
  for (const auto& line : set_lines(p)) j.argv.insert(j.argv.end(), {"--set", line});
  j.argv.insert(j.argv.end(), {"--experiment", spec.name, "--no-progress"});
  // A resumed run keeps who it is (train refuses --name, --parent, --code).
  if (!st.resume_uuid.empty()) {
    j.argv.insert(j.argv.end(), {"--resume", st.resume_uuid});
    return j;
  }
  j.argv.insert(j.argv.end(), {"--name", p.name, "--parent", study});
  // The code is the study file's repository, not the logs folder's where
  // the planned base config is written.
  if (const std::string code = code_of(spec); !code.empty())
    j.argv.insert(j.argv.end(), {"--code", code});
  return j;
}

}  // namespace

int default_workers(const StudySpec& spec) {
  if (spec.workers > 0) return spec.workers;
  return std::max(1, env::cpu_budget().threads() / spec.threads_per_run);
}

namespace {

// The scheduling loop: keeps every slot busy, retries what failed, and
// reports progress after every start and end.
class Scheduler {
 public:
  Scheduler(std::shared_ptr<store::Store> store, const StudySpec& spec, const StudyOptions& o,
            std::string study, const ProgressFn& progress)
      : store_(std::move(store)),
        spec_(spec),
        o_(o),
        study_(std::move(study)),
        progress_fn_(progress) {
    logs_ = o.log_dir.empty() ? std::filesystem::path("trainscope-studies") /
                                    core::short_uuid(store::folder_safe_uuid(study_))
                              : o.log_dir;
  }

  Progress run(const Plan& plan) {
    plan_ = &plan;
    store_->reap_stale_runs();
    base_ = base_file(spec_, logs_);
    exec_ = make_executor();
    auto by_name = children(*store_, study_);
    for (uint64_t i = 0; i < plan.size(); ++i) {
      State st = state_of(*store_, i, by_name[plan.at(i).name]);
      ++p_.total;
      // Every unfinished run is tried again, with a fresh budget of retries,
      // but one another process is training now.
      if (st.finished) {
        ++p_.done, ++p_.skipped;
      } else if (!st.live.empty()) {
        if (p_.elsewhere++ == 0) p_.elsewhere_first = st.live;
      } else {
        queue_.push_back(st);
      }
    }
    start_ = core::unix_now();
    report(fmt::format(
        "{} runs: {} done before, {} to run{}, {} worker(s)", p_.total, p_.skipped, queue_.size(),
        p_.elsewhere ? fmt::format(", {} running elsewhere", p_.elsewhere) : "", exec_->slots()));
    SignalGuard guard;
    while ((!queue_.empty() || exec_->running() > 0) && g_signal == 0) step();
    if (g_signal != 0) stop();
    return p_;
  }

 private:
  void step() {
    while (!queue_.empty() && exec_->running() < exec_->slots()) {
      State st = queue_.front();
      queue_.pop_front();
      Job job = make_job(st, *plan_, spec_, o_, study_, logs_, base_);
      running_[job.id] = st;
      runs_before_[job.id] = runs_named(job.id);
      exec_->start(job);
    }
    p_.running = exec_->running();
    auto end = exec_->wait_any();
    if (end) finish(*end);
  }

  void finish(const JobEnd& end) {
    State st = running_[end.id];
    running_.erase(end.id);
    // How the job left its runs, before the reaper judges the ones left
    // running (left_unended tells a run the script ended apart).
    ended_by_job_.clear();
    for (const auto& r : attempts(*store_, study_, end.id)) ended_by_job_[r.uuid] = r.status;
    store_->reap_stale_runs();  // a child killed by a signal is marked killed
    // A job that continues a run has its run; a new one must have made one.
    const bool recorded = !st.resume_uuid.empty() || runs_named(end.id) > runs_before_[end.id];
    supersede_older_attempts(*store_, study_, end.id);
    State now = state_of(*store_, st.index, attempts(*store_, study_, end.id));
    const std::string log = (logs_ / log_name(end.id)).string();
    if (now.finished) {
      ++p_.done;
      durations_.push_back(end.seconds);
      report(fmt::format("{} finished in {:.1f}s{}", end.id, end.seconds, ended_after(end, log)));
    } else if (++tries_[end.id] <= spec_.retries && !refused_at_start(end, recorded)) {
      ++p_.retried;
      queue_.push_back(now);
      report(fmt::format("{} ended ({}{}), retrying (see {})", end.id, describe(end, recorded),
                         left_unended(end), log));
    } else if (recorded) {
      ++p_.failed;
      const std::string why = describe(end, recorded) + left_unended(end);
      const std::string failed = fmt::format("failed {} time{}, last {} (see {})", tries_[end.id],
                                             tries_[end.id] == 1 ? "" : "s", why, log);
      give_up(end.id, failed);
      report(end.id + " " + failed);
    } else {
      failed_unrecorded(end, log);
    }
  }

  // A planned run whose last attempt recorded no run: a failed run in its
  // place (kRecordedNothingTag) says so to every reader, and the study says
  // what the command must do.
  void failed_unrecorded(const JobEnd& end, const std::string& log) {
    ++p_.failed;
    const std::string what =
        fmt::format("{} (see {})", nothing_recorded(end, !spec_.command.empty()), log);
    // The failed run in its place, made by the run owner: readers count it
    // failed (study_runs).
    instrument::record_planned_failure(*store_, study_, spec_.name, end.id, kRecordedNothingTag,
                                       what);
    supersede_older_attempts(*store_, study_, end.id);
    if (p_.recorded_nothing++ == 0) p_.recorded_nothing_first = end.id + ": " + what;
    report(fmt::format("{} failed {} times: {}", end.id, tries_[end.id], what));
  }

  // "; its run ... was left killed: ..." when the job's process exited by
  // itself and its planned run's newest run is neither finished nor failed:
  // it ended without ending its run (a script's os._exit), or, when the
  // job had ended it so itself, "; its run ... was ended stopped by the job".
  std::string left_unended(const JobEnd& end) {
    if (end.signal != 0) return "";  // killed: the reaper's "killed" says it all
    const auto runs = attempts(*store_, study_, end.id);
    if (runs.empty() || runs.back().status == RunStatus::kFinished ||
        runs.back().status == RunStatus::kFailed)
      return "";
    const auto& r = runs.back();
    const auto before = ended_by_job_.find(r.uuid);
    // Only the job ends a run stopped; killed may be the reaper's word for
    // a run another process judged before this one looked.
    if (before != ended_by_job_.end() && before->second == RunStatus::kStopped)
      return fmt::format("; its run {} was ended stopped by the job (finish('stopped'))",
                         core::short_uuid(r.uuid));
    if (r.status == RunStatus::kKilled)
      return fmt::format(
          "; its run {} was left killed: ended so by the job, or by a reaper after the process "
          "ended without ending it (a `with` block or finish() ends a run; os._exit skips both)",
          core::short_uuid(r.uuid));
    return fmt::format(
        "; its run {} was left {}: the process ended without ending its run (a `with` block or "
        "finish() ends it; os._exit skips both)",
        core::short_uuid(r.uuid), store::to_string(r.status));
  }

  // A job whose run finished but whose process then failed (a script that
  // raised or exited non-zero after finish()): the run's record is whole
  // and counts finished, as every reader counts it; how the process ended
  // is tagged on it (kJobEndedTag) and said here.
  std::string ended_after(const JobEnd& end, const std::string& log) {
    if (end.ok()) return "";
    const std::string how = end.signal ? fmt::format("was killed by signal {}", end.signal)
                                       : fmt::format("exited {}", end.exit_code);
    const auto runs = attempts(*store_, study_, end.id);
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
      if (it->status == RunStatus::kFinished) {
        store_->set_tag(it->uuid, kJobEndedTag, how);
        return fmt::format(
            "; its run {} had ended finished, then its process {} (see {}): the run counts "
            "finished",
            core::short_uuid(it->uuid), how, log);
      }
    return "";
  }

  // Tags the newest run of planned run `name` that is not failed with why
  // the study gave up on it (kGaveUpTag), so that every reader counts it
  // failed as this run did.
  void give_up(const std::string& name, const std::string& why) {
    const auto runs = attempts(*store_, study_, name);
    if (!runs.empty() && runs.back().status != RunStatus::kFailed)
      store_->set_tag(runs.back().uuid, kGaveUpTag, why);
  }

  // A training refused before it recorded anything (exit 2: a key the
  // machine cannot serve, such as compute.device: cuda without a GPU) is
  // refused again on every retry.
  static bool refused_at_start(const JobEnd& e, bool recorded) {
    return !recorded && e.signal == 0 && e.exit_code == 2;
  }

  static std::string describe(const JobEnd& e, bool recorded) {
    return (e.signal ? fmt::format("signal {}", e.signal) : fmt::format("exit {}", e.exit_code)) +
           (recorded ? "" : ", no run recorded");
  }

  // Runs of planned run `name` in the store, set aside or not.
  size_t runs_named(const std::string& name) {
    return store_->list_runs({.parent_uuid = study_, .name = name}).size();
  }

  void stop() {
    report(fmt::format("signal {}: stopping {} running run(s)", g_signal.load(), exec_->running()));
    exec_->stop_all();
    while (exec_->running() > 0)
      if (auto end = exec_->wait_any()) stopped(*end);
    p_.running = 0;
  }

  // A job that ended while the study stops: counted as every reader counts
  // its run (one that finished meanwhile is done), never retried.
  void stopped(const JobEnd& end) {
    const State st = running_[end.id];
    running_.erase(end.id);
    store_->reap_stale_runs();
    supersede_older_attempts(*store_, study_, end.id);
    if (state_of(*store_, st.index, attempts(*store_, study_, end.id)).finished) {
      ++p_.done;
      durations_.push_back(end.seconds);
    }
  }

  std::unique_ptr<Executor> make_executor() {
    const int workers = o_.workers > 0 ? o_.workers : default_workers(spec_);
    // A trainer's runs fork from a worker that has libtorch and the base
    // config's dataset in memory; a command study's runs are its command.
    if (o_.executor == "local" && o_.warm && spec_.command.empty())
      return warm_executor(workers, worker_argv(o_), warm_of(spec_, base_.string()),
                           o_.early_worker);
    if (o_.executor == "local") return local_executor(workers);
    if (o_.executor != "slurm")
      fail(ErrorKind::kUsage, "unknown executor '{}'; use local or slurm", o_.executor);
    SlurmOptions so;
    so.partition = o_.partition;
    so.array_parallelism = o_.array_parallelism;
    so.dir = std::filesystem::absolute(logs_);
    // The tasks' command line is written into the sbatch script: a
    // password in the store URI travels in their environment instead.
    const store::UriPassword split = store::split_password(o_.store_uri);
    so.task_command = {o_.program.string(), "--store", split.uri, "-q", "study", "task", study_};
    if (!split.password.empty()) so.environment["PGPASSWORD"] = split.password;
    so.on_submit = [this](const std::string& id) {
      // `study status` asks Slurm about these beside what the store says.
      auto tags = store_->tags(study_);
      const std::string& before = tags["slurm.jobs"];
      store_->set_tag(study_, "slurm.jobs", before.empty() ? id : before + "," + id);
    };
    return slurm_executor(so);
  }

  void report(const std::string& event) {
    p_.event = event;
    p_.running = exec_->running();
    p_.elapsed_s = core::unix_now() - start_;
    if (!durations_.empty()) {
      double mean = 0;
      for (double d : durations_) mean += d / durations_.size();
      int left = p_.total - p_.done - p_.failed;
      p_.eta_s = mean * left / exec_->slots();
    }
    if (progress_fn_) progress_fn_(p_);
  }

  std::shared_ptr<store::Store> store_;
  const StudySpec& spec_;
  const StudyOptions& o_;
  std::string study_;
  ProgressFn progress_fn_;
  std::filesystem::path logs_;
  std::filesystem::path base_;  // the config file every training trains
  const Plan* plan_ = nullptr;
  std::unique_ptr<Executor> exec_;
  std::deque<State> queue_;
  std::map<std::string, State> running_;
  std::map<std::string, int> tries_;               // retries used per run in this execution
  std::map<std::string, size_t> runs_before_;      // runs_named() when its job started
  std::map<std::string, RunStatus> ended_by_job_;  // the ending job's runs, before the reaper
  std::vector<double> durations_;
  Progress p_;
  double start_ = 0;
};

// A study stopped by a signal, or that left a planned run to the process
// training it (resumable: `study resume` runs the rest), is stopped.
RunStatus final_status(const Progress& p) {
  if (g_signal != 0 || p.elsewhere > 0) return RunStatus::kStopped;
  return p.failed > 0 ? RunStatus::kFailed : RunStatus::kFinished;
}

Outcome execute(std::shared_ptr<store::Store> store, std::unique_ptr<store::RunRecorder> rec,
                const StudySpec& spec, const StudyOptions& o, const ProgressFn& progress) {
  Scheduler sched(store, spec, o, rec->uuid(), progress);
  const Plan plan(spec);
  Outcome out{rec->uuid(), sched.run(plan)};
  if (g_signal != 0) {
    // Stopped: a run whose failed end was not yet judged (given up, or to
    // retry) counts as every reader counts it, failed, in the last line.
    const StudyStatus now = study_status(*store, rec->uuid());
    out.progress.done = now.total.finished;
    out.progress.failed = now.total.failed;
  }
  rec->log_metric("study/runs_done", out.progress.done, 0);
  rec->log_metric("study/runs_failed", out.progress.failed, 0);
  rec->end(final_status(out.progress));
  return out;
}

}  // namespace

// A study of this name already in the store: running the file again would
// train every run twice and make the name ambiguous to every later command.
void check_name_free(store::Store& store, const StudySpec& spec) {
  for (const auto& r : store.list_runs({.experiment = spec.name, .name = spec.name})) {
    auto tags = store.tags(r.uuid);
    if (tags.count("kind") == 0 || tags["kind"] != "study") continue;
    fail(ErrorKind::kConflict,
         "study {} already exists in the store ({}, {}): `trainscope study resume {}` continues "
         "it; give the study another name (study: in {}) to plan a new one",
         spec.name, core::short_uuid(r.uuid), store::to_string(r.status), core::short_uuid(r.uuid),
         spec.file.filename().string());
  }
}

std::vector<std::string> worker_argv(const StudyOptions& o) {
  return {o.program.string(), "study", "worker", "--fd", "3"};
}

void start_early_worker(const StudySpec& study, StudyOptions& o) {
  if (o.executor == "local" && o.warm && study.command.empty() && o.early_worker.pid < 0)
    o.early_worker = start_worker(worker_argv(o), warm_of(study, study.base.string()));
}

Outcome run_study(std::shared_ptr<store::Store> store, const StudySpec& spec, const StudyOptions& o,
                  const ProgressFn& progress) {
  if (spec.resolved_base.empty() && spec.command.empty())
    fail(ErrorKind::kUsage, "study {} has not been planned: plan it with plan_study()", spec.name);
  if (o.executor == "slurm") check_slurm(o.partition);
  check_name_free(*store, spec);
  instrument::RunIdentity id;  // as given: a study is never another's child
  id.experiment = spec.name;
  id.name = spec.name;
  id.command_line = o.command_line;
  id.config_text = recorded_text(spec);
  auto rec = instrument::start_run(store, id);
  rec->set_tag("kind", "study");
  // Where the plan came from (params: fixed), and what it is (tags: a
  // re-plan changes them).
  rec->set_params({{"study.file", std::filesystem::absolute(spec.file).string()},
                   {spec.command.empty() ? "study.base" : "study.command",
                    spec.command.empty() ? spec.base.string() : spec.command},
                   {"study.quick", o.quick ? "true" : "false"}});
  for (const auto& [k, v] : plan_tags(spec)) rec->set_tag(k, v);
  return execute(store, std::move(rec), spec, o, progress);
}

RunInfo resolve_study(store::Store& store, const std::string& ref) {
  RunInfo r = store.resolve_run(ref);
  auto tags = store.tags(r.uuid);
  if (tags.count("kind") == 0 || tags["kind"] != "study")
    fail(ErrorKind::kUsage,
         "run {} ({}) is not a study: give the study's name or UUID "
         "(`trainscope runs list` shows them)",
         core::short_uuid(r.uuid), r.name);
  return r;
}

StudySpec recorded_spec(store::Store& store, const RunInfo& study) {
  store::verify_config(study);  // its runs are planned from it
  auto params = store.params(study.uuid);
  // A run tagged a study by hand (a store written before own tags were
  // refused, or planted) has no plan to read.
  if (!params.count("study.file") || study.config_text.empty())
    fail(ErrorKind::kUsage,
         "run {} ({}) is tagged kind=study but `study run` did not record it: it holds no study "
         "plan",
         core::short_uuid(study.uuid), core::escape_for_display(study.name));
  // The plan is the store's: one it does not read is a damaged store, not
  // the study file on disk (which may say something else, or be gone).
  try {
    return parse_recorded(study.config_text, params["study.file"], params["study.quick"] == "true");
  } catch (const core::Error& e) {
    if (e.kind() != ErrorKind::kUsage) throw;
    std::string why = e.what();
    if (const std::string file = params["study.file"] + ": "; why.starts_with(file))
      why.erase(0, file.size());
    fail(ErrorKind::kStore,
         "study {} ({}): its recorded plan does not read: {}; the store is damaged",
         core::short_uuid(study.uuid), core::escape_for_display(study.name), why);
  }
}

void check_planned_child(store::Store& store, const RunInfo& parent, const std::string& name,
                         const std::string& config_sha256) {
  auto tags = store.tags(parent.uuid);
  if (tags.count("kind") == 0 || tags["kind"] != "study") return;
  const StudySpec spec = recorded_spec(store, parent);
  const Plan plan(spec);
  if (const auto i = plan.find(name)) {
    // Another config under a planned name was counted as the study's run,
    // its own set aside (twenty-sixth hunt, B-D2).
    if (planned_hash(spec, plan.at(*i)) == config_sha256) return;
    fail(ErrorKind::kConflict,
         "'{}' is a planned run of study {} with another config than this run's: a study "
         "counts only the runs it plans (`trainscope study task {} {}` trains it); train this "
         "one without --parent, or under another parent",
         core::escape_for_display(name), parent.name, parent.name, core::escape_for_display(name));
  }
  fail(ErrorKind::kConflict,
       "'{}' is not a planned run of study {}: a study's runs are trained by `trainscope study "
       "run` or `study resume` (or `study task {} NAME`); train it without --parent, or under "
       "another parent",
       core::escape_for_display(name), parent.name, parent.name);
}

// A run that names a study as its parent is admitted by the study's plan.
static const bool trainscope_parent_kind_study [[maybe_unused]] =
    instrument::register_parent_kind("study", &check_planned_child);

Outcome resume_study(std::shared_ptr<store::Store> store, const std::string& ref,
                     const StudyOptions& o, const ProgressFn& progress) {
  store->reap_stale_runs();
  RunInfo study = resolve_study(*store, ref);
  if (study.status == RunStatus::kRunning)
    fail(ErrorKind::kConflict, "study {} is running (pid {} on {}): wait for it or stop it first",
         study.name, study.pid, study.host);
  StudySpec spec = o.replan ? replan_study(*store, study, o) : recorded_spec(*store, study);
  if (!o.replan) check_unchanged(*store, study, spec);
  if (o.executor == "slurm") check_slurm(o.partition);
  if (!o.log_dir.empty()) make_log_folder(o.log_dir);  // before the study is running again
  return execute(store, store::RunRecorder::attach(store, study.uuid), spec, o, progress);
}

std::optional<Job> planned_task(store::Store& store, const std::string& ref,
                                const std::string& name, const StudyOptions& o) {
  store.reap_stale_runs();
  RunInfo study = resolve_study(store, ref);
  StudySpec spec = recorded_spec(store, study);
  const Plan plan(spec);
  const auto index = plan.find(name);
  if (!index)
    fail(ErrorKind::kNotFound, "study {} plans no run named '{}'", study.name,
         core::escape_for_display(name));
  State st = state_of(store, *index, attempts(store, study.uuid, name));
  if (st.finished) return std::nullopt;
  if (!st.live.empty())
    fail(ErrorKind::kConflict, "{} of study {} is running now in another process: wait for it",
         st.live, study.name);
  // A task may run where the study's log folder is not: the base config
  // then goes into a private temporary folder.
  const std::filesystem::path dir =
      o.log_dir.empty() ? std::filesystem::temp_directory_path() / "trainscope-plans" : o.log_dir;
  return make_job(st, plan, spec, o, study.uuid, o.log_dir, base_file(spec, dir));
}

namespace {

// What Slurm's queue holds of the study's arrays, when it went through Slurm.
void slurm_state(store::Store& store, StudyStatus& s) {
  auto tags = store.tags(s.study.uuid);
  if (tags["slurm.jobs"].empty()) return;
  s.slurm_jobs = core::split_list(tags["slurm.jobs"]);
  try {
    s.slurm_queue = slurm_queue(s.slurm_jobs);
  } catch (const core::Error& e) {
    s.slurm_error = e.what();  // the store's view stands on its own
  }
}

// What a planned run's counted run says it is doing (CellStatus's columns).
void count_planned(store::Store& store, const PlannedAttempts& p, double now, CellStatus& c,
                   StudyStatus& s) {
  ++c.planned;
  const RunInfo* r = p.counted();
  if (!r) {
    ++c.pending;
  } else if (r->status == RunStatus::kFinished) {
    ++c.finished;
  } else if (r->status == RunStatus::kRunning) {
    ++(store.liveness(*r, now).stale() ? c.stale : c.running);
  } else if (r->status == RunStatus::kFailed) {
    ++c.failed;
    auto tags = store.tags(r->uuid);
    if (auto it = tags.find(kRecordedNothingTag); it != tags.end()) {
      if (s.recorded_nothing++ == 0)
        s.recorded_nothing_example = p.planned.name + ": " + it->second;
    }
  } else if (auto tags = store.tags(r->uuid); tags.count(kGaveUpTag)) {
    ++c.failed;  // `study run` gave up on it, and said so: failed, as it counted
    if (s.gave_up++ == 0) s.gave_up_example = p.planned.name + ": " + tags[kGaveUpTag];
  } else {
    ++c.pending;  // stopped or killed: a resume continues or retries it
  }
}

}  // namespace

StudyStatus study_status(store::Store& store, const std::string& ref) {
  StudyStatus s;
  s.study = resolve_study(store, ref);
  const double now = store.now();
  s.liveness = store.liveness(s.study, now);
  const StudyRuns runs = study_runs(store, s.study);
  s.set_aside = static_cast<int>(runs.set_aside.size());
  std::map<std::string, size_t> cell_index;
  for (const auto& p : runs.planned) {
    if (!cell_index.count(p.planned.cell)) {
      cell_index[p.planned.cell] = s.cells.size();
      s.cells.push_back({p.planned.cell});
    }
    count_planned(store, p, now, s.cells[cell_index[p.planned.cell]], s);
  }
  double sum = 0;
  int n = 0;
  for (const auto& r : runs.results()) {
    const double seconds = store::run_seconds(r, 0);  // finished runs: their end
    if (!std::isnan(seconds)) sum += seconds, ++n;
  }
  slurm_state(store, s);
  for (const auto& c : s.cells) {
    s.total.planned += c.planned, s.total.finished += c.finished, s.total.running += c.running;
    s.total.failed += c.failed, s.total.pending += c.pending, s.total.stale += c.stale;
  }
  s.mean_run_s = n ? sum / n : std::nan("");  // none finished: no mean (it was 0 s)
  return s;
}

}  // namespace trainscope::study
