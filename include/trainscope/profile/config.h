// The per-layer profiler's config section.
#pragma once

#include <cstdint>

namespace trainscope::config {
struct Config;
}

namespace trainscope::profile {

// The `profile` section (config.section<ProfileConfig>()), checked when a
// config is parsed; the profile unit attaches its observer when enabled.
struct ProfileConfig {
  static constexpr const char* kName = "profile";
  bool enabled = false;      // per-layer profiling (`trainscope profile` sets it)
  int64_t warmup_steps = 5;  // never profile these first steps
  int64_t every = 10;        // then profile every Nth step (1: every step)
};

// Refuses (Error kUsage, one line, before the run exists) a training of
// `steps` steps (its config's train.epochs of `batches_per_epoch` batches,
// at most train.max_steps) that profiles nothing: none past
// profile.warmup_steps. Says what trains the config longer.
void check_profiled_steps(const config::Config& config, int64_t steps, int64_t batches_per_epoch);

}  // namespace trainscope::profile
