// The resource sampler as a unit of any run (monitor.interval_s > 0):
// samples the process, the machine, GPUs and energy counters into the run
// (monitor/sampler.h) from on_run_begin to on_run_end.
#pragma once

#include <memory>

#include "trainscope/instrument/events.h"
#include "trainscope/monitor/sampler.h"

namespace trainscope::monitor {

// The monitor unit's observer: run begin starts a ResourceSampler (its own
// thread) on the run's recorder for the whole process tree of the training
// (RunContext::process_root); run end stops it, which records the energy
// totals. Events come on the training thread; the recorder must outlive
// the run (it does: the event source owns it).
class SamplingObserver : public instrument::TrainObserver {
 public:
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_run_end(const instrument::RunContext& ctx,
                  const instrument::TrainResult& result) override;

 private:
  std::unique_ptr<ResourceSampler> sampler_;
};

}  // namespace trainscope::monitor
