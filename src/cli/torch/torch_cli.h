// The torch half of the CLI: the commands that need libtorch, run with the
// arguments the executable parsed. Built as libtrainscope_torch_commands.so
// and loaded on demand (../torch_plugin.cc); prints like the rest of the CLI.
#pragma once

#include "../torch_commands.h"

namespace trainscope::cli::torch_cli {

void train(Context& ctx, const TrainArgs& args);
void eval(Context& ctx, const EvalArgs& args);
void weights(Context& ctx, const WeightsArgs& args);
void diff(Context& ctx, const DiffArgs& args);
void rerun(Context& ctx, const RerunArgs& args);
void profile(Context& ctx, const ProfileArgs& args);
void profile_grid(Context& ctx, const std::string& grid_file);
void profile_show(Context& ctx, const ProfileShowArgs& args);
void costmodel_predict(Context& ctx, const CostmodelArgs& args);
void tune(Context& ctx, const TuneArgs& args);
env::Manifest torch_environment();
void add_logmap_variants(numerics::LogmapOptions& options);

}  // namespace trainscope::cli::torch_cli
