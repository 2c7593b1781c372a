// The resource sampler's config section (monitor/sampler.h).
#pragma once

namespace trainscope::monitor {

// The `monitor` section (config.section<MonitorConfig>()), checked when a
// config is parsed (src/monitor/config.cc); SamplingObserver passes it to
// ResourceSampler's SamplerOptions.
struct MonitorConfig {
  static constexpr const char* kName = "monitor";
  double interval_s = 1.0;  // resource sampling (0: off)
  double carbon_kg_per_kwh = 0.385;
  double cpu_tdp_watts = 0;  // 0: estimate 10 W per physical core
};

}  // namespace trainscope::monitor
