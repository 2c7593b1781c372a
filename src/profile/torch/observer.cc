#include "trainscope/profile/observer.h"

#include <unistd.h>

#include <fstream>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/profile/config.h"
#include "trainscope/profile/records.h"
#include "trainscope/profile/report.h"

namespace fs = std::filesystem;

namespace trainscope::profile {

using instrument::RunContext;
using instrument::Step;
using instrument::StepPhase;
using instrument::TrainResult;

namespace {
Phase profiler_phase(StepPhase p) {
  switch (p) {
    case StepPhase::kData:
      return Phase::kData;
    case StepPhase::kZeroGrad:
      return Phase::kZeroGrad;
    case StepPhase::kForward:
      return Phase::kForward;
    case StepPhase::kLoss:
      return Phase::kLoss;
    case StepPhase::kBackward:
      return Phase::kBackward;
    case StepPhase::kUpdate:
      return Phase::kUpdate;
    case StepPhase::kRecording:
      return Phase::kRecording;
  }
  return Phase::kNone;
}
}  // namespace

ProfilingObserver::ProfilingObserver() = default;
ProfilingObserver::~ProfilingObserver() = default;

bool ProfilingObserver::profiled(const config::Config& config, int64_t step) const {
  const ProfileConfig& c = config.section<ProfileConfig>();
  return step > c.warmup_steps && (step - c.warmup_steps - 1) % c.every == 0;
}

void ProfilingObserver::on_run_begin(const RunContext& ctx) {
  const ProfileConfig& c = ctx.config.section<ProfileConfig>();
  if (ctx.total_steps > 0 && ctx.total_steps <= c.warmup_steps)
    core::log_warn(
        "profiling: the run has {} steps, not more than profile.warmup_steps = {}; nothing will "
        "be profiled (lower the warm-up or train longer)",
        ctx.total_steps, c.warmup_steps);
  instrument::Source& source = ctx.source;
  profiler_ = std::make_unique<IterationProfiler>(ctx.model, /*keep_events=*/true,
                                                  [&source] { return source.optimizer_state(); });
  // The layers' facts from a training batch; a source without training
  // inputs gives its first step's instead.
  if (auto sample = source.train_inputs(ctx.config.train.batch_size); sample.defined())
    describe(ctx, sample);
}

void ProfilingObserver::describe(const RunContext& ctx, const torch::Tensor& sample) {
  described_ = true;
  instrument::Source& source = ctx.source;
  auto layers = describe_layers(
      ctx.model, [&](torch::Tensor x) { return source.forward(x); }, sample);
  if (layers.empty())
    core::log_warn(
        "profiling: model '{}' publishes no layer events, so its time is profiled by phase "
        "only; call trainscope::layers::instrument(model) once after building it, or name its "
        "layers with layers::run_layer() (trainscope/layers/layers.h)",
        source.model_name());
  ctx.run.log_record(kLayersKind, layers_record(layers_to_json(layers)));
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
  if (!described_ && step.inputs.defined()) describe(ctx, step.inputs);
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
  for (auto& r : cell_records(to_cells(profiles_))) ctx.run.log_record(kStepsKind, std::move(r));
  // Every profiled iteration as a Chrome trace, one process per step.
  ctx.run.write_artifact(kTraceArtifact, kTraceKind,
                         [&](std::ostream& out) { out << chrome_trace(profiles_); });
  for (const auto& p : profiles_) ctx.run.log_metric("profile/coverage", p.coverage, p.step);
  // The GEMM peak the layers' GFLOP/s are compared with (roofline share),
  // recorded so that a reader without libtorch (the dashboard) has it.
  ctx.run.log_metric("profile/peak_gflops", peak_gflops(), profiles_.back().step);
  profiles_.clear();
}

}  // namespace trainscope::profile

namespace trainscope::profile {

TRAINSCOPE_UNIT(profile, instrument::Unit{.name = "profile",
                                          .before = {"*"},  // first: its clock brackets the step
                                          .observers = [](const config::Config& c) {
                                            instrument::Observers out;
                                            if (c.section<ProfileConfig>().enabled)
                                              out.push_back(std::make_shared<ProfilingObserver>());
                                            return out;
                                          }});

}  // namespace trainscope::profile
