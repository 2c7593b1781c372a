#include <cmath>

#include "trainscope/core/util.h"
#include "trainscope/train/observers.h"

namespace trainscope::train {

namespace {
void log_eval(store::RunRecorder& run, const std::string& prefix, const EvalResult& r,
              int64_t step) {
  run.log_metric(prefix + "/loss", r.loss, step);
  run.log_metric(prefix + "/accuracy", r.accuracy, step);
  run.log_metric(prefix + "/macro_f1", r.macro_f1, step);
  if (r.top5 >= 0) run.log_metric(prefix + "/top5", r.top5, step);
  if (r.roc_auc >= 0) run.log_metric(prefix + "/roc_auc", r.roc_auc, step);
}
}  // namespace

void MetricsObserver::on_batch_begin(const RunContext& ctx) { step_start_ = core::monotonic_now(); }

void MetricsObserver::on_batch_end(const RunContext& ctx, const Step& step) {
  if (step.number % ctx.config.train.log_every_steps == 0)
    ctx.run.log_metric("train/step_ms", (core::monotonic_now() - step_start_) * 1e3, step.number);
}

void MetricsObserver::on_phase(const RunContext& ctx, StepPhase phase) {
  // The first batch of the run is ready.
  if (phase == StepPhase::kZeroGrad && ctx.position.epoch == 0 && ctx.position.batch == 0)
    ctx.run.log_metric("time_to_first_batch_s", core::monotonic_now() - ctx.start_time, 0);
}

void MetricsObserver::on_after_step(const RunContext& ctx, const Step& step) {
  const Config& c = ctx.config;
  // A loss that fails the run is recorded whatever the step.
  const bool fatal = !std::isfinite(step.loss_value) && c.train.on_nan == "fail";
  if (step.number % c.train.log_every_steps == 0 || fatal)
    ctx.run.log_metric("train/loss", step.loss_value, step.number);
  if (step.number % c.train.log_every_steps == 0 && !fatal)
    ctx.run.log_metric("lr", step.lr, step.number);
}

void MetricsObserver::on_evaluation_end(const RunContext& ctx, const Evaluation& e) {
  log_eval(ctx.run, e.split, e.result, e.epoch);
}

void MetricsObserver::on_epoch_end(const RunContext& ctx, const EpochInfo& info) {
  store::RunRecorder& run = ctx.run;
  const int64_t e1 = info.epoch + 1;
  run.log_metric("train/epoch_loss", info.train_loss, e1);
  run.log_metric("train/accuracy", info.train_accuracy, e1);
  run.log_metric("epoch_time_s", info.seconds, e1);
  run.log_metric("samples_per_s", static_cast<double>(info.samples) / info.seconds, e1);
  run.log_metric("steps_per_s", static_cast<double>(info.steps) / info.seconds, e1);
  const double target = ctx.config.eval.target_accuracy;
  if (target > 0 && !target_reached_ && info.test.accuracy >= target) {
    target_reached_ = true;
    run.log_metric("time_to_target_s", core::monotonic_now() - ctx.start_time, e1);
    run.log_metric("epochs_to_target", static_cast<double>(e1), e1);
    run.set_tag("target_accuracy.reached_at_epoch", std::to_string(e1));
  }
  run.log_metric("epoch", static_cast<double>(e1), ctx.position.step);
}

void MetricsObserver::on_run_end(const RunContext& ctx, const TrainResult& result) {
  if (result.status == store::RunStatus::kFailed) return;
  if (ctx.config.eval.target_accuracy > 0 && !target_reached_)
    ctx.run.set_tag("target_accuracy.reached_at_epoch", "not reached");
}

}  // namespace trainscope::train
