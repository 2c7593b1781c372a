// The entry point the executable looks up in libtrainscope_torch_commands.so.
#include "torch_cli.h"

namespace trainscope::cli {
namespace {

class Commands final : public TorchCommands {
 public:
  void train(Context& c, const TrainArgs& a) override { torch_cli::train(c, a); }
  void config_show(Context& c, const ConfigArgs& a) override { torch_cli::config_show(c, a); }
  void config_keys(Context& c) override { torch_cli::config_keys(c); }
  std::vector<study::WeightSpread> weight_spread(Context& c,
                                                 const study::StudyAnalysis& a) override {
    return study::weight_spread(*c.store(), a);
  }
  void check_configs(
      const std::string& config,
      const std::vector<std::pair<std::string, std::vector<std::string>>>& runs) override {
    torch_cli::check_configs(config, runs);
  }
  void eval(Context& c, const EvalArgs& a) override { torch_cli::eval(c, a); }
  void diff(Context& c, const DiffArgs& a) override { torch_cli::diff(c, a); }
  void rerun(Context& c, const RerunArgs& a) override { torch_cli::rerun(c, a); }
  void profile(Context& c, const ProfileArgs& a) override { torch_cli::profile(c, a); }
  void profile_grid(Context& c, const std::string& f) override { torch_cli::profile_grid(c, f); }
  void profile_show(Context& c, const ProfileShowArgs& a) override {
    torch_cli::profile_show(c, a);
  }
  void costmodel_fit(Context& c, const CostmodelArgs& a) override {
    torch_cli::costmodel_fit(c, a);
  }
  void costmodel_predict(Context& c, const CostmodelArgs& a) override {
    torch_cli::costmodel_predict(c, a);
  }
  void costmodel_eval(Context& c, const CostmodelArgs& a) override {
    torch_cli::costmodel_eval(c, a);
  }
  void tune(Context& c, const TuneArgs& a) override { torch_cli::tune(c, a); }
  env::Manifest torch_environment() override { return torch_cli::torch_environment(); }
  void add_logmap_variants(numerics::LogmapOptions& o) override {
    torch_cli::add_logmap_variants(o);
  }
};

}  // namespace
}  // namespace trainscope::cli

extern "C" __attribute__((visibility("default"))) trainscope::cli::TorchCommands*
trainscope_torch_commands_v1() {
  static trainscope::cli::Commands commands;
  return &commands;
}
