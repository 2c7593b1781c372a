// The monitor section of a config (config/section.h).
#include "trainscope/monitor/config.h"

#include <fmt/format.h>

#include "trainscope/config/section.h"
#include "trainscope/core/util.h"

namespace trainscope::monitor {

namespace {

std::optional<config::Violation> check(const config::Config& c) {
  const double s = c.section<MonitorConfig>().interval_s;
  if (s > 0 && s < 0.05)
    return config::Violation{
        {"monitor.interval_s"},
        "monitor.interval_s",
        fmt::format("must be at least 0.05 s, or 0 to turn sampling off (got {})",
                    core::format_double(s))};
  return std::nullopt;
}

}  // namespace

TRAINSCOPE_CONFIG_SECTION(
    monitor,
    config::Section{
        .name = MonitorConfig::kName,
        .fields =
            {
                config::double_key("monitor.interval_s", &MonitorConfig::interval_s,
                                   config::Interval{0, 3600, false, false},
                                   "Resource sampling interval, 0 (off) or at least 0.05 s"),
                config::double_key("monitor.carbon_kg_per_kwh", &MonitorConfig::carbon_kg_per_kwh,
                                   config::Interval{0, 10, false, false},
                                   "Grid carbon intensity for CO2"),
                config::double_key(
                    "monitor.cpu_tdp_watts", &MonitorConfig::cpu_tdp_watts,
                    config::Interval{0, 100000, false, false},
                    "CPU TDP for the energy estimate without RAPL (0: 10 W per physical core)"),
            },
        .check_together = check});

}  // namespace trainscope::monitor
