// The profile section of a config (config/section.h).
#include "trainscope/profile/config.h"

#include <optional>

#include "trainscope/config/config.h"
#include "trainscope/config/section.h"
#include "trainscope/core/error.h"

namespace trainscope::profile {

namespace {

// The profiler times layers on the host, between synchronous CPU kernels;
// a GPU's are asynchronous, and its times would be launch times.
std::optional<config::Violation> check(const config::Config& c) {
  if (!c.section<ProfileConfig>().enabled || c.compute.device == "cpu") return std::nullopt;
  return config::Violation{{"profile.enabled", "compute.device"},
                           "profile.enabled",
                           "times layers on the host, and compute.device is " + c.compute.device +
                               ", whose kernels run asynchronously: per-layer time on a GPU is "
                               "not built yet (docs/gpu.md); profile on the CPU"};
}

}  // namespace

TRAINSCOPE_CONFIG_SECTION(
    profile,
    config::Section{
        .name = ProfileConfig::kName,
        .fields =
            {
                config::bool_key("profile.enabled", &ProfileConfig::enabled,
                                 "Per-layer time profiling"),
                config::int_key("profile.warmup_steps", &ProfileConfig::warmup_steps, 0,
                                config::kMaxSteps, "Steps before the first profiled one"),
                config::int_key("profile.every", &ProfileConfig::every, 1, config::kMaxSteps,
                                "Profile every Nth step after the warm-up"),
            },
        .check_together = check});

void check_profiled_steps(const config::Config& config, int64_t steps, int64_t batches_per_epoch) {
  const int64_t warmup = config.section<ProfileConfig>().warmup_steps;
  if (steps > warmup) return;
  const int64_t epochs = config.train.epochs;
  core::fail(core::ErrorKind::kUsage,
             "this config trains {} step(s) ({} epoch(s) of {} batch(es){}), not more than "
             "profile.warmup_steps = {}: nothing would be profiled; train longer (--set "
             "train.epochs=N) or --set profile.warmup_steps=N",
             steps, epochs, batches_per_epoch,
             config.train.max_steps > 0 && config.train.max_steps < epochs * batches_per_epoch
                 ? ", at most train.max_steps"
                 : "",
             warmup);
}

}  // namespace trainscope::profile
