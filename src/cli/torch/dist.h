// `train --nproc N`: the launcher, and a rank's side of the CLI (dist.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../torch_commands.h"
#include "trainscope/dist/world.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli::torch_cli {

// Starts the ranks of a training of dist.nproc > 1 when this process is
// not one of them, waits for them and reports how they ended (an Error
// naming the first rank that failed). False when this process is a rank
// or the training is not data-parallel.
bool launch_ranks(Context& ctx, const TrainArgs& args, const config::Config& cfg);

// From now on, the ranks launch_ranks starts are forks of this process that
// run their command line with `run` (dist::LaunchOptions::in_process): set
// by a study's warm worker, whose trainings' ranks then take its loaded
// libtorch and decoded dataset instead of starting cold.
void run_ranks_in_process(std::function<int(const std::vector<std::string>&)> run);

// This process's world when it is a rank (nullptr when not), joined; the
// options get its shard, and rank > 0 writes no checkpoints;
// compute.threads auto becomes the usable cores over the ranks of this
// host; rank > 0 is quiet. A rank > 0 of a resumed run starts from the
// checkpoint rank 0 resumes from, whose path rank 0 puts in the
// rendezvous store (the ranks of several hosts share a filesystem).
std::shared_ptr<dist::World> join_as_rank(Context& ctx, config::Config& cfg,
                                          train::TrainOptions& o);

// Whether this rank was asked to stop (its handlers, set by join_as_rank).
bool rank_stop_requested();

}  // namespace trainscope::cli::torch_cli
