#include "trainscope/train/observers.h"

namespace trainscope::train {

void SamplingObserver::on_run_begin(const RunContext& ctx) {
  monitor::SamplerOptions so;
  so.interval_s = ctx.config.monitor.interval_s;
  so.carbon_kg_per_kwh = ctx.config.monitor.carbon_kg_per_kwh;
  so.cpu_tdp_watts = ctx.config.monitor.cpu_tdp_watts;
  sampler_ = std::make_unique<monitor::ResourceSampler>(ctx.run, so);
}

void SamplingObserver::on_run_end(const RunContext& ctx, const TrainResult& result) {
  if (sampler_) sampler_->stop();
}

}  // namespace trainscope::train
