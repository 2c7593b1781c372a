// The probes' config section: which preset, how often, which layers, and
// the alert thresholds (probes/builtin.h has the presets and rules).
#pragma once

#include <cstdint>
#include <string>

#include "trainscope/config/config.h"
#include "trainscope/probes/builtin.h"

namespace trainscope::probes {

// The `probes` section (config.section<ProbesConfig>()), each key checked
// when a config is parsed (src/probes/config.cc); probe_settings turns it
// into ProbeSettings. alert_* are AlertSettings' thresholds.
struct ProbesConfig {
  static constexpr const char* kName = "probes";
  std::string preset = "off";    // off | economy | standard | full
  std::string every = "preset";  // preset (10; full: 1) or N >= 1: steps N, 2N, ...
  std::string layers = "*";      // glob over layer names
  std::string types;             // comma-separated module types; empty: all
  int64_t max_depth = 0;         // 0: any
  std::string kinds;             // comma-separated kinds narrowing the preset's
  int64_t histogram_bins = 64;
  int64_t activation_samples = 32;  // examples of the batch whose activations are probed (0: all)
  int64_t test_every = 0;           // test accuracy (test subset) every N steps; 0: off
  int64_t workers = 1;              // worker threads computing the probes
  int64_t queue = 64;               // packets waiting per worker
  std::string when_full = "block";  // block | drop (counted in probe/dropped)
  bool tensorboard = true;          // an events.out.tfevents file among the artifacts
  int64_t alert_patience = 3;
  double alert_update_ratio_high = 0.3;
  double alert_update_ratio_low = 1e-7;
  double alert_dead_fraction = 0.5;
  double alert_saturated_fraction = 0.5;
  double alert_grad_depth_ratio = 1e4;
  double alert_overfit_drop = 0.02;
};

// The probe settings a config asks for.
ProbeSettings probe_settings(const config::Config& config);

}  // namespace trainscope::probes
