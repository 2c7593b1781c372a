// The trainer's config as a study needs it: resolving a study's base
// config when it is planned, and the config each of its runs trains.
#include "torch_cli.h"
#include "trainscope/train/config.h"

namespace trainscope::cli::torch_cli {

namespace {

class Resolver final : public study::ConfigResolver {
 public:
  std::string resolve_file(const std::filesystem::path& path) override {
    return train::to_yaml(train::load_config(path.string(), {}));
  }
  std::string resolve_text(const std::string& base, const std::vector<std::string>& sets) override {
    return train::to_yaml(train::parse_config(base, sets, "the study's recorded base config"));
  }
};

}  // namespace

study::ConfigResolver& config_resolver() {
  static Resolver resolver;
  return resolver;
}

}  // namespace trainscope::cli::torch_cli
