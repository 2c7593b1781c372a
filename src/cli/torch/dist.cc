// `trainscope train CONFIG --nproc N` (dist/README.md): this process
// launches N ranks of itself; each joins the world and trains its shard of
// every batch (train::join_data_parallel, train.cc), and rank 0 records
// the run.
#include "dist.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "../output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/launch.h"
#include "trainscope/store/store.h"
#include "trainscope/train/data_parallel.h"

namespace trainscope::cli::torch_cli {
using core::ErrorKind;

namespace {

std::function<int(const std::vector<std::string>&)>& rank_runner() {
  static std::function<int(const std::vector<std::string>&)> run;
  return run;
}

// The command line of rank r: this program's train command again.
std::vector<std::string> rank_argv(const Context& ctx, const TrainArgs& a, int rank, int nproc) {
  std::error_code ec;
  std::vector<std::string> v = {std::filesystem::read_symlink("/proc/self/exe", ec).string()};
  if (!ctx.store_uri.empty()) v.insert(v.end(), {"--store", ctx.store_uri});
  // -q reaches rank 0 too: its progress and epoch lines are this command's.
  if (rank > 0 || core::verbosity() == core::Verbosity::kQuiet) v.push_back("-q");
  if (core::verbosity() == core::Verbosity::kVerbose) v.push_back("-v");
  if (ctx.json && rank == 0) v.push_back("--json");
  v.insert(v.end(), {"train", a.config, "--set", "dist.nproc=" + std::to_string(nproc)});
  for (const auto& s : a.sets) v.insert(v.end(), {"--set", s});
  if (!a.name.empty()) v.insert(v.end(), {"--name", a.name});
  if (!a.experiment.empty()) v.insert(v.end(), {"--experiment", a.experiment});
  if (!a.parent.empty()) v.insert(v.end(), {"--parent", a.parent});
  if (!a.code.empty()) v.insert(v.end(), {"--code", a.code});
  if (!a.resume.empty() && rank == 0) v.insert(v.end(), {"--resume", a.resume});
  if (a.no_progress || rank > 0) v.push_back("--no-progress");
  return v;
}

ErrorKind kind_of(int code) {
  switch (code) {
    case 2:
      return ErrorKind::kUsage;
    case 3:
      return ErrorKind::kNotFound;
    case 4:
      return ErrorKind::kConflict;
    case 5:
      return ErrorKind::kStore;
    default:
      return ErrorKind::kRuntime;
  }
}

// A rank's error line (LaunchOutcome::errors) without its "trainscope: "
// and newline: "" when it printed none.
std::string message_of(const dist::LaunchOutcome& out, int rank) {
  std::string m = out.errors.size() > static_cast<size_t>(rank) ? out.errors[rank] : "";
  if (m.rfind("trainscope: ", 0) == 0) m.erase(0, 12);
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.pop_back();
  return m;
}

// Whether the launch ended by the user's stop (a signal to this process,
// passed on) reaching a rank before it could stop at a step: it ended
// saying nothing of its own.
bool stopped_by_user(const dist::LaunchOutcome& out) {
  return out.signal != 0 && out.failed_rank >= 0 && message_of(out, out.failed_rank).empty();
}

// The one line a failed launch says. The ranks printed nothing: each sent
// its error to the launcher (dist::kErrorFdVar). Rank 0's own error, alone,
// when it failed first or met the same one (a config every rank refuses);
// another rank's with its number; how a rank that said nothing ended.
[[noreturn]] void fail_launch(const dist::LaunchOutcome& out, int nproc, const std::string& run) {
  const std::string first = message_of(out, out.failed_rank);
  if (!first.empty() && (out.failed_rank == 0 || first == message_of(out, 0)))
    throw core::Error(first, kind_of(out.exit_code));
  const std::string what = first.empty() ? out.what : first;
  // The user stopped the launch (a signal to this process, passed on) and a
  // rank ended by it before it could stop at a step: the user's signal ended
  // the launch, not a rank's failure.
  if (stopped_by_user(out))
    throw core::Error(fmt::format("stopped by SIG{} before the ranks could stop at a step (rank {} "
                                  "of {} {} as it started){}",
                                  sigabbrev_np(out.signal), out.failed_rank, nproc, what, run),
                      ErrorKind::kRuntime);
  throw core::Error(
      fmt::format("rank {} of {} (pid {} on {}){} {}; the other ranks were stopped{}",
                  out.failed_rank, nproc, out.pids[static_cast<size_t>(out.failed_rank)],
                  core::host_name(), first.empty() ? "" : ":", what, run),
      kind_of(out.exit_code));
}

// Rank 0's run when the ranks failed before rank 0 published it (it does
// once they meet): the run this host's rank 0 process created since the
// launch, found by its pid, whatever its status (opening the store has
// marked it killed: its process is gone). Empty when it created none.
std::string run_of_rank0(store::Store& store, int pid, double since) {
  for (const auto& r : store.list_runs({.limit = 64}))
    if (r.pid == pid && r.host == core::host_name() && r.start_time >= since - 1) return r.uuid;
  return {};
}

}  // namespace

bool launch_ranks(Context& ctx, const TrainArgs& a, const config::Config& cfg) {
  const auto& dc = cfg.section<dist::DistConfig>();
  if (dc.nproc <= 1 || dist::rendezvous_from_env(dc.nproc)) return false;
  if (dc.backend != "gloo")
    core::fail(ErrorKind::kUsage,
               "dist.backend {} needs GPUs and a libtorch built with it; this trainscope trains "
               "data-parallel on CPUs with gloo",
               dc.backend);
  if (!a.resume.empty())
    train::resume_checkpoint(*ctx.store(), a.resume);  // before any rank starts
  dist::LaunchOptions lo;
  lo.nproc = static_cast<int>(dc.nproc);
  lo.timeout_s = dc.timeout_s;
  for (int r = 0; r < lo.nproc; ++r) lo.argv.push_back(rank_argv(ctx, a, r, lo.nproc));
  lo.in_process = rank_runner();
  const double started = core::unix_now();
  dist::LaunchOutcome out = dist::launch(lo);
  // A rank failed before the ranks met (rank 0 had recorded its run, not
  // yet published it): the run is found and reaped, never left running.
  if (out.run_uuid.empty() && out.failed_rank >= 0 && !out.pids.empty())
    out.run_uuid = run_of_rank0(*ctx.store(), out.pids[0], started);
  std::string run;
  if (!out.run_uuid.empty()) {
    auto store = ctx.store();
    store->reap_stale_runs();  // rank 0 killed: its run is marked killed now
    const auto info = store->find_run(out.run_uuid);
    // Stopped by a signal: rank 0 said where and how to resume.
    if (out.failed_rank < 0 && info && info->status == store::RunStatus::kStopped)
      throw core::Error("stopped by signal", ErrorKind::kRuntime);
    if (out.failed_rank < 0) return true;
    // Rank 0 recorded its run in full but could not write its output (a
    // closed pipe, a full disk): it said so itself (core/output.h), once,
    // on the stderr we share, and main exits 2; the run is whole, and no
    // rank failed.
    if (out.failed_rank == 0 && out.exit_code == 2 && info &&
        info->status == store::RunStatus::kFinished) {
      core::note_output_cut_reported();
      return true;
    }
    if (!stopped_by_user(out))
      store->set_tag(out.run_uuid, "dist.failed_rank", std::to_string(out.failed_rank));
    if (info)
      run = fmt::format("; run {} is {}", core::short_uuid(out.run_uuid),
                        store::to_string(info->status));
  }
  if (out.failed_rank < 0) return true;
  fail_launch(out, lo.nproc, run);
}

void run_ranks_in_process(std::function<int(const std::vector<std::string>&)> run) {
  rank_runner() = std::move(run);
}

}  // namespace trainscope::cli::torch_cli
