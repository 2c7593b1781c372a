// A process's part in a data-parallel training (rank.h): the rank policy
// that `train --nproc N`'s ranks, a study's ranks and any other caller of
// train::join_data_parallel share.
#include "trainscope/dist/rank.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/dist/config.h"
#include "trainscope/dist/rendezvous.h"
#include "trainscope/env/cpus.h"

namespace trainscope::dist {
using core::ErrorKind;

namespace {

// A rank asked to stop (Ctrl-C, SIGTERM passed on by the launcher, SIGHUP
// of a closed terminal) stops only when every rank agrees on the step
// (ReplicaObserver); the launcher kills the ranks on a second signal.
volatile std::sig_atomic_t g_rank_stop = 0;
void note_rank_stop(int) { g_rank_stop = 1; }

std::function<bool()> stop_on_signals() {
  std::signal(SIGINT, note_rank_stop);
  std::signal(SIGTERM, note_rank_stop);
  std::signal(SIGHUP, note_rank_stop);
  return [] { return g_rank_stop != 0; };
}

}  // namespace

std::optional<Rank> join_rank(config::Config& cfg, const RankOptions& options) {
  const auto& dc = cfg.section<DistConfig>();
  const auto rv = rendezvous_from_env(dc.nproc);
  if (!rv) return std::nullopt;
  if (rv->size != dc.nproc)
    core::fail(ErrorKind::kUsage,
               "{}={} but the config's dist.nproc is {}: start the ranks with "
               "`train --nproc N`",
               kSizeVar, rv->size, dc.nproc);
  // compute.threads auto: the cores this process may use, shared by the
  // ranks of this host (recorded as the number each rank used).
  if (cfg.compute.threads == "auto")
    cfg.compute.threads = std::to_string(std::max(1, env::cpu_budget().threads() / rv->local_size));
  Rank rank;
  rank.world = std::make_shared<World>(*rv, dc);
  World& world = *rank.world;
  rank.records = world.rank() == 0;
  if (rank.records) {
    rank.store = options.store();
    // Every other rank starts from the checkpoint this one resumes from
    // (the same weights, optimizer state and position).
    world.set("checkpoint", options.resume_checkpoint ? options.resume_checkpoint() : "");
    // Rank 0's resource monitor samples the launcher's tree: every local
    // rank's CPU, memory and (estimated) energy, not rank 0's alone.
    if (rv->source == "launcher") rank.process_root = getppid();
  } else {
    if (core::verbosity() == core::Verbosity::kNormal) core::set_verbosity(core::Verbosity::kQuiet);
    rank.init_checkpoint = world.get("checkpoint");
  }
  rank.sync = std::make_shared<ReplicaSync>(
      rank.world, options.stop_requested ? options.stop_requested : stop_on_signals());
  return rank;
}

}  // namespace trainscope::dist
