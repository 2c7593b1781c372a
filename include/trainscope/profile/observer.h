// The per-layer profiler as a unit of any run (profile.enabled): profiles
// of the steps profile.warmup_steps + 1 + k * profile.every, kept in memory
// and written at the end of the run so that store I/O never lands inside a
// measured step. Records profile/step_ms_profiled or
// profile/step_ms_unprofiled for every step, profile/coverage per profiled
// step, the layers' facts (from the source's training inputs, else from
// the first step's), and the profiled steps as a Chrome trace artifact.
// Its observer comes first among the units: its clock brackets the step.
#pragma once

#include <memory>
#include <vector>

#include "trainscope/instrument/events.h"
#include "trainscope/profile/profiler.h"

namespace trainscope::profile {

// The profile unit's observer (see the file comment); its events come on
// the training thread, where it profiles.
class ProfilingObserver : public instrument::TrainObserver {
 public:
  // Holds nothing until run begin; the destructor frees what it kept.
  ProfilingObserver();
  ~ProfilingObserver() override;
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_batch_begin(const instrument::RunContext& ctx) override;
  void on_phase(const instrument::RunContext& ctx, instrument::StepPhase phase) override;
  void on_batch_end(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void on_run_end(const instrument::RunContext& ctx,
                  const instrument::TrainResult& result) override;

 private:
  bool profiled(const config::Config& c, int64_t step) const;
  void describe(const instrument::RunContext& ctx, const torch::Tensor& sample);
  void save(const instrument::RunContext& ctx);

  std::unique_ptr<IterationProfiler> profiler_;
  std::vector<IterationProfile> profiles_;
  bool active_ = false;  // the current step is profiled
  bool described_ = false;
  double step_start_ = 0;
};

}  // namespace trainscope::profile
