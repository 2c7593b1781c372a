// `train --nproc N`: the launcher (dist.cc). A rank's side is
// train::join_data_parallel (train.cc calls it).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../torch_commands.h"
#include "trainscope/config/config.h"

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

}  // namespace trainscope::cli::torch_cli
