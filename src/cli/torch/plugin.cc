// The entry point the executable looks up in libtrainscope_torch_commands.so.
#include <c10/util/Exception.h>
#include <c10/util/Logging.h>

#include <stdexcept>
#include <string>

#include "dist.h"
#include "torch_cli.h"
#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/data/data.h"
#include "trainscope/env/manifest.h"
#include "trainscope/env/torch.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/study/weights.h"
#include "trainscope/train/torch_env.h"

namespace trainscope::cli {
namespace {

// Runs a command of the torch half. An error of libtorch's own (a check
// that trainscope should have made first: a defect) leaves as a
// std::runtime_error whose first line names libtorch and the failure;
// main.cc prints that line, and the backtrace after it only with -v.
template <typename F>
decltype(auto) guarded(F&& f) {
  // Where a GPU is, torch's CUDA half is mapped before any command asks
  // libtorch about CUDA (it fixes its CUDA hooks at the first question):
  // rerun, replay or eval of a GPU run would otherwise find no GPU.
  (void)env::load_torch_cuda_where_a_driver_is();
  try {
    return f();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    // Memory is the machine's limit, not a defect: sizes the config asks for
    // that do not fit are bad input, said in one line.
    if (auto oom = train::allocation_failure(what); !oom.empty())
      throw core::Error("out of memory: libtorch needed " + oom +
                            "; lower train.batch_size, eval.batch_size, the model's size or the "
                            "data's (data.synthetic.*)",
                        core::ErrorKind::kUsage);
    throw std::runtime_error("libtorch: " + what.substr(0, what.find('\n')) + "\n" + e.what());
  }
}

class Commands final : public TorchCommands {
 public:
  void train(Context& c, const TrainArgs& a) override {
    guarded([&] { torch_cli::train(c, a); });
  }
  std::vector<study::WeightSpread> weight_spread(Context& c,
                                                 const study::StudyAnalysis& a) override {
    return guarded([&] { return study::weight_spread(*c.store(), a); });
  }
  void eval(Context& c, const EvalArgs& a) override {
    guarded([&] { torch_cli::eval(c, a); });
  }
  void weights(Context& c, const WeightsArgs& a) override {
    guarded([&] { torch_cli::weights(c, a); });
  }
  void diff(Context& c, const DiffArgs& a) override {
    guarded([&] { torch_cli::diff(c, a); });
  }
  void rerun(Context& c, const RerunArgs& a) override {
    guarded([&] { torch_cli::rerun(c, a); });
  }
  void profile(Context& c, const ProfileArgs& a) override {
    guarded([&] { torch_cli::profile(c, a); });
  }
  void profile_grid(Context& c, const std::string& f) override {
    guarded([&] { torch_cli::profile_grid(c, f); });
  }
  void profile_show(Context& c, const ProfileShowArgs& a) override {
    guarded([&] { torch_cli::profile_show(c, a); });
  }
  void costmodel_predict(Context& c, const CostmodelArgs& a) override {
    guarded([&] { torch_cli::costmodel_predict(c, a); });
  }
  void tune(Context& c, const TuneArgs& a) override {
    guarded([&] { torch_cli::tune(c, a); });
  }
  void warm(const std::string& config, const std::vector<std::string>& sets,
            std::function<int(const std::vector<std::string>&)> run) override {
    torch_cli::run_ranks_in_process(std::move(run));
    if (config.empty()) return;
    // The dataset decoded and its files hashed (env::hash_files keeps the
    // hashes), once for every training forked from this process. Only
    // speed depends on it: a config that does not load (the study refuses
    // it when it plans) or another dataset leaves each training to read
    // its own.
    try {
      env::hash_files(data::warm_dataset(config::load_config(config, sets).data));
    } catch (const std::exception& e) {
      core::log_debug("study worker: nothing warmed from {}: {}", config, e.what());
    }
  }
  env::Manifest torch_environment() override {
    return guarded([] { return torch_cli::torch_environment(); });
  }
  void add_logmap_variants(numerics::LogmapOptions& o) override {
    guarded([&] { torch_cli::add_logmap_variants(o); });
  }
};

}  // namespace
}  // namespace trainscope::cli

extern "C" __attribute__((visibility("default"))) trainscope::cli::TorchCommands*
trainscope_torch_commands_v1() {
  // c10's log level from TORCH_CPP_LOG_LEVEL (the executable sets it before
  // loading this half, FATAL unless -v), as `import torch` does for Python.
  c10::initLogging();
  // Units built outside trainscope, which link this half's libraries
  // (instrument/unit.h); a bad one is one line, as any bad input.
  (void)trainscope::instrument::load_units_from_environment();
  static trainscope::cli::Commands commands;
  return &commands;
}
