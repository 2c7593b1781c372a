// The profile section of a config (config/section.h).
#include "trainscope/profile/config.h"

#include "trainscope/config/section.h"

namespace trainscope::profile {

TRAINSCOPE_CONFIG_SECTION(
    profile, config::Section{
                 .name = ProfileConfig::kName,
                 .order = 30,
                 .fields = {
                     config::bool_key("profile.enabled", &ProfileConfig::enabled,
                                      "Per-layer time profiling"),
                     config::int_key("profile.warmup_steps", &ProfileConfig::warmup_steps, 0,
                                     config::kMaxSteps, "Steps before the first profiled one"),
                     config::int_key("profile.every", &ProfileConfig::every, 1, config::kMaxSteps,
                                     "Profile every Nth step after the warm-up"),
                 }});

}  // namespace trainscope::profile
