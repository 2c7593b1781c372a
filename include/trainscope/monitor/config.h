// The resource sampler's config section (monitor/sampler.h).
#pragma once

namespace trainscope::monitor {

struct MonitorConfig {
  static constexpr const char* kName = "monitor";
  double interval_s = 1.0;  // resource sampling (0: off)
  double carbon_kg_per_kwh = 0.385;
  double cpu_tdp_watts = 0;  // 0: estimate 10 W per physical core
};

}  // namespace trainscope::monitor
