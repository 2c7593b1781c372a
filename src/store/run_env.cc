#include "trainscope/store/run_env.h"

#include <cstdlib>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"

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
  std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
  // The one rule of what a run accepts (accept.h), for a param's or a tag's.
  auto why = key_refusal("key", key);
  if (!why) why = value_refusal("key", key, value);
  if (why) core::fail(core::ErrorKind::kUsage, "{}: {}", what, *why);
  return {std::move(key), std::move(value)};
}

RunEnv run_env() {
  RunEnv e;
  e.experiment = variable("TRAINSCOPE_EXPERIMENT");
  e.name = variable("TRAINSCOPE_RUN_NAME");
  // Empty means unset, as for every TRAINSCOPE_ variable.
  auto why = e.experiment.empty() ? std::nullopt
                                  : experiment_problem("TRAINSCOPE_EXPERIMENT", e.experiment);
  if (!why) why = run_name_problem("TRAINSCOPE_RUN_NAME", e.name);
  if (why) core::fail(core::ErrorKind::kUsage, "{}", *why);
  for (const std::string& item : core::split_list(variable("TRAINSCOPE_TAGS"))) {
    auto [k, v] =
        parse_key_value(item, "TRAINSCOPE_TAGS", "TRAINSCOPE_TAGS=team=vision,ablation=1");
    e.tags[k] = v;
  }
  return e;
}

}  // namespace trainscope::store
