#include "trainscope/store/run_env.h"

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"

namespace trainscope::store {

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

}  // namespace trainscope::store
