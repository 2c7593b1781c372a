#include <unistd.h>

#include <fstream>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/profile/report.h"
#include "trainscope/train/observers.h"

namespace fs = std::filesystem;

namespace trainscope::train {

namespace {
profile::Phase profiler_phase(StepPhase p) {
  switch (p) {
    case StepPhase::kData:
      return profile::Phase::kData;
    case StepPhase::kZeroGrad:
      return profile::Phase::kZeroGrad;
    case StepPhase::kForward:
      return profile::Phase::kForward;
    case StepPhase::kLoss:
      return profile::Phase::kLoss;
    case StepPhase::kBackward:
      return profile::Phase::kBackward;
    case StepPhase::kUpdate:
      return profile::Phase::kUpdate;
    case StepPhase::kRecording:
      return profile::Phase::kRecording;
  }
  return profile::Phase::kNone;
}
}  // namespace

ProfilingObserver::ProfilingObserver() = default;
ProfilingObserver::~ProfilingObserver() = default;

bool ProfilingObserver::profiled(const Config& c, int64_t step) const {
  return step > c.profile.warmup_steps &&
         (step - c.profile.warmup_steps - 1) % c.profile.every == 0;
}

void ProfilingObserver::on_run_begin(const RunContext& ctx) {
  const Config& c = ctx.config;
  if (ctx.total_steps <= c.profile.warmup_steps)
    core::log_warn(
        "profiling: the run has {} steps, not more than profile.warmup_steps = {}; nothing will "
        "be profiled (lower the warm-up or train longer)",
        ctx.total_steps, c.profile.warmup_steps);
  Optimizer& opt = ctx.optimizer;
  profiler_ = std::make_unique<profile::IterationProfiler>(ctx.model, /*keep_events=*/true,
                                                           [&opt] { return opt.state_tensors(); });
  const Dataset& train = ctx.data.train;
  auto sample =
      to_input(train.images.narrow(0, 0, std::min<int64_t>(c.train.batch_size, train.size())),
               ctx.data.mean, ctx.data.std, dtype_of(c), channels_last(c));
  Classifier& model = ctx.model;
  auto layers = profile::describe_layers(
      model, [&](torch::Tensor x) { return model.forward(x); }, sample);
  ctx.run.store().set_profile_layers(ctx.run.uuid(), profile::layers_to_json(layers));
}

void ProfilingObserver::on_batch_begin(const RunContext& ctx) {
  step_start_ = core::monotonic_now();
  active_ = profiled(ctx.config, ctx.position.step + 1);
  // Operator events for the trace are kept for the first profiled step only.
  if (active_) profiler_->begin(ctx.position.step + 1, /*keep_events=*/true);
}

void ProfilingObserver::on_phase(const RunContext& ctx, StepPhase phase) {
  if (active_) profiler_->phase(profiler_phase(phase));
}

void ProfilingObserver::on_batch_end(const RunContext& ctx, const Step& step) {
  if (active_) profiles_.push_back(profiler_->end());
  ctx.run.log_metric(active_ ? "profile/step_ms_profiled" : "profile/step_ms_unprofiled",
                     (core::monotonic_now() - step_start_) * 1e3, step.number);
  active_ = false;
}

void ProfilingObserver::on_run_end(const RunContext& ctx, const TrainResult& result) {
  if (active_) profiler_->end();  // a step cut short by a failure
  active_ = false;
  if (result.status != store::RunStatus::kFailed) save(ctx);
}

void ProfilingObserver::save(const RunContext& ctx) {
  if (profiles_.empty()) return;
  ctx.run.store().append_profile(ctx.run.uuid(), profile::to_cells(profiles_));
  // Every profiled iteration as a Chrome trace, one process per step.
  ctx.run.write_artifact(profile::kTraceArtifact, profile::kTraceKind,
                         [&](std::ostream& out) { out << profile::chrome_trace(profiles_); });
  for (const auto& p : profiles_) ctx.run.log_metric("profile/coverage", p.coverage, p.step);
  // The GEMM peak the layers' GFLOP/s are compared with (roofline share),
  // recorded so that a reader without libtorch (the dashboard) has it.
  ctx.run.log_metric("profile/peak_gflops", profile::peak_gflops(), profiles_.back().step);
  profiles_.clear();
}

}  // namespace trainscope::train
