// The per-layer profiler's config section.
#pragma once

#include <cstdint>

namespace trainscope::profile {

// The `profile` section (config.section<ProfileConfig>()), checked when a
// config is parsed; the profile unit attaches its observer when enabled.
struct ProfileConfig {
  static constexpr const char* kName = "profile";
  bool enabled = false;      // per-layer profiling (`trainscope profile` sets it)
  int64_t warmup_steps = 5;  // never profile these first steps
  int64_t every = 10;        // then profile every Nth step (1: every step)
};

}  // namespace trainscope::profile
