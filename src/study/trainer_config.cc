// The trainer's config as a study plans with it: resolving a study's base
// config and the config each of its runs trains. The config component is
// torch-free, so planning a study does not load libtorch.
#include "trainscope/config/config.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

namespace {

class TrainerConfig final : public ConfigResolver {
 public:
  std::string resolve_file(const std::filesystem::path& path) override {
    return config::to_yaml(config::load_config(path.string(), {}));
  }
  std::string resolve_text(const std::string& base, const std::vector<std::string>& sets) override {
    return config::to_yaml(config::parse_config(base, sets, "the study's recorded base config"));
  }
};

}  // namespace

ConfigResolver& trainer_config() {
  static TrainerConfig resolver;
  return resolver;
}

}  // namespace trainscope::study
