#include "trainscope/store/run_env.h"

#include <cstdlib>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::store {

namespace {

std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::pair<std::string, std::string> parse_key_value(std::string_view item, std::string_view what,
                                                    std::string_view example) {
  const auto eq = item.find('=');
  if (eq == 0 || eq == std::string_view::npos)
    core::fail(core::ErrorKind::kUsage, "{}: '{}' is not key=value; e.g. {}", what,
               core::escape_for_display(item), example);
  return {std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))};
}

RunEnv run_env() {
  RunEnv e;
  e.experiment = variable("TRAINSCOPE_EXPERIMENT");
  e.name = variable("TRAINSCOPE_RUN_NAME");
  for (const std::string& item : core::split_list(variable("TRAINSCOPE_TAGS"))) {
    auto [k, v] =
        parse_key_value(item, "TRAINSCOPE_TAGS", "TRAINSCOPE_TAGS=team=vision,ablation=1");
    e.tags[k] = v;
  }
  return e;
}

}  // namespace trainscope::store
