// The resource sampler as a unit of any run.
#include "trainscope/monitor/observer.h"

#include "trainscope/instrument/unit.h"
#include "trainscope/monitor/config.h"

namespace trainscope::monitor {

void SamplingObserver::on_run_begin(const instrument::RunContext& ctx) {
  const MonitorConfig& c = ctx.config.section<MonitorConfig>();
  SamplerOptions so;
  so.interval_s = c.interval_s;
  so.carbon_kg_per_kwh = c.carbon_kg_per_kwh;
  so.cpu_tdp_watts = c.cpu_tdp_watts;
  so.pid = ctx.process_root;  // the whole training on this host (every local rank)
  sampler_ = std::make_unique<ResourceSampler>(ctx.run, so);
}

void SamplingObserver::on_run_end(const instrument::RunContext&, const instrument::TrainResult&) {
  if (sampler_) sampler_->stop();
}

TRAINSCOPE_UNIT(monitor,
                instrument::Unit{.name = "monitor", .observers = [](const config::Config& c) {
                                   instrument::Observers out;
                                   if (c.section<MonitorConfig>().interval_s > 0)
                                     out.push_back(std::make_shared<SamplingObserver>());
                                   return out;
                                 }});

}  // namespace trainscope::monitor
