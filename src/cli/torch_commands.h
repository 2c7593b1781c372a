// The commands that need libtorch, as the torch-free `trainscope` executable
// sees them: their parsed arguments, and an interface the torch half
// (libtrainscope_torch_commands.so, src/cli/torch/) implements. The
// executable parses every command itself, so `--help` never loads libtorch;
// it loads the torch half only when one of these commands runs
// (torch_plugin.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "context.h"
#include "trainscope/env/manifest.h"
#include "trainscope/numerics/logmap.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"

namespace trainscope::cli {

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string name, experiment, resume, parent;
  std::string code;   // whose git tree the run records; empty: the config's
  int64_t nproc = 0;  // > 0: --set dist.nproc=N
  bool no_progress = false;
};

struct ConfigArgs {
  std::string config;
  std::vector<std::string> sets;
};

struct EvalArgs {
  std::string run, checkpoint;
};

struct WeightsArgs {
  std::string run, checkpoint, out;
};

struct DiffArgs {
  std::string a, b;
  bool no_replay = false;
};

struct RerunArgs {
  std::string run;
  bool verify = false, force = false;
};

struct ProfileArgs {
  std::string config;
  std::vector<std::string> sets;
  int64_t steps = 60, every = 0;
  std::string name;
};

struct ProfileShowArgs {
  std::string run, format = "table", trace, svg;
  int64_t ops = -1;  // >= 0: the operator table instead (0: every operator)
};

struct CostmodelArgs {
  std::vector<std::string> runs;  // fit, eval
  std::string model_file = "trainscope-costmodel.json";
  std::string config;                 // predict
  std::vector<std::string> sets;      // predict
  int64_t batch = 0;                  // predict
  std::string format = "table", svg;  // eval
  bool layers = false;                // eval
};

struct TuneArgs {
  std::string config;
  std::vector<std::string> sets;
  int64_t steps = 150;
  int rounds = 3;
  std::vector<double> batch_multiples;
  bool no_profile = false;
};

// Implemented by the torch half; every method parses nothing and prints the
// command's results (or throws core::Error).
class TorchCommands {
 public:
  virtual ~TorchCommands() = default;
  virtual void train(Context& ctx, const TrainArgs& args) = 0;
  // The spread of weights across each cell's runs, from their checkpoints.
  virtual std::vector<study::WeightSpread> weight_spread(Context& ctx,
                                                         const study::StudyAnalysis& a) = 0;
  virtual void eval(Context& ctx, const EvalArgs& args) = 0;
  virtual void weights(Context& ctx, const WeightsArgs& args) = 0;
  virtual void diff(Context& ctx, const DiffArgs& args) = 0;
  virtual void rerun(Context& ctx, const RerunArgs& args) = 0;
  virtual void profile(Context& ctx, const ProfileArgs& args) = 0;
  virtual void profile_grid(Context& ctx, const std::string& grid_file) = 0;
  virtual void profile_show(Context& ctx, const ProfileShowArgs& args) = 0;
  virtual void costmodel_predict(Context& ctx, const CostmodelArgs& args) = 0;
  virtual void tune(Context& ctx, const TuneArgs& args) = 0;
  // Before a study worker forks its trainings: loads the dataset that
  // `config` with `sets` (empty config: none) trains on into this process's
  // memory, so that each child reads it from there (data/data.h,
  // warm_dataset), and hashes its files (env::hash_files). The ranks of a
  // data-parallel training are then forked too and run their command line
  // with `run`.
  virtual void warm(const std::string& config, const std::vector<std::string>& sets,
                    std::function<int(const std::vector<std::string>&)> run) = 0;
  // libtorch's part of the environment manifest (env/manifest.h groups
  // libraries, threads, flags).
  virtual env::Manifest torch_environment() = 0;
  // The logistic map's libtorch variants, for `numerics logmap`.
  virtual void add_logmap_variants(numerics::LogmapOptions& options) = 0;
};

// The torch half, loaded on first use. Throws core::Error naming the file
// and what to do when it is missing or does not load.
TorchCommands& torch_commands();
// The same, or nullptr when this trainscope has no torch half (a build
// without libtorch): for commands that only add libtorch's part when present.
TorchCommands* torch_commands_if_present();

// The symbol the torch half exports.
#define TRAINSCOPE_TORCH_COMMANDS_SYMBOL "trainscope_torch_commands_v1"
using TorchCommandsEntry = TorchCommands* (*)();

}  // namespace trainscope::cli
