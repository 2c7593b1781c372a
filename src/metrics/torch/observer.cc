// Metrics as a unit of any run.
#include "trainscope/metrics/observer.h"

#include <cmath>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/instrument/unit.h"

namespace trainscope::metrics {

void MetricsObserver::on_run_begin(const RunContext& ctx) {
  if (!ctx.resumed) return;
  for (const auto& m : ctx.run.store().metric_summaries(ctx.run.uuid()))
    recorded_until_[m.key] = m.last_step;
}

void MetricsObserver::log(const RunContext& ctx, const std::string& key, double value,
                          int64_t step) {
  auto it = recorded_until_.find(key);
  if (it != recorded_until_.end() && step <= it->second) return;  // a replayed step
  ctx.run.log_metric(key, value, step);
}

void MetricsObserver::on_batch_begin(const RunContext& ctx) { step_start_ = core::monotonic_now(); }

void MetricsObserver::on_batch_end(const RunContext& ctx, const Step& step) {
  if (ctx.run.deleted())  // someone deleted the run: training it on records nothing
    core::fail(core::ErrorKind::kNotFound,
               "run {} was deleted from the store while it trained; stopped after step {}",
               core::short_uuid(ctx.run.uuid()), step.number);
  // Another process took the run over (or it was marked killed while this
  // one was paused): training on would record nothing.
  if (ctx.run.lease_lost()) ctx.run.check();
  if (step.number % ctx.config.train.log_every_steps == 0)
    log(ctx, "train/step_ms", (core::monotonic_now() - step_start_) * 1e3, step.number);
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
    log(ctx, "train/loss", step.loss_value, step.number);
  if (step.number % c.train.log_every_steps == 0 && !fatal) log(ctx, "lr", step.lr, step.number);
  // fp16's loss scale at the log steps; a skipped update at every step.
  if (step.loss_scale > 0 && step.number % c.train.log_every_steps == 0)
    log(ctx, "train/loss_scale", step.loss_scale, step.number);
  if (step.skipped) log(ctx, "train/skipped_step", 1, step.number);
}

void MetricsObserver::on_evaluation_end(const RunContext& ctx, const Evaluation& e) {
  const EvalResult& r = e.result;
  log(ctx, e.split + "/loss", r.loss, e.epoch);
  log(ctx, e.split + "/accuracy", r.accuracy, e.epoch);
  log(ctx, e.split + "/macro_f1", r.macro_f1, e.epoch);
  if (r.top5 >= 0) log(ctx, e.split + "/top5", r.top5, e.epoch);
  if (r.roc_auc >= 0) log(ctx, e.split + "/roc_auc", r.roc_auc, e.epoch);
}

void MetricsObserver::on_epoch_end(const RunContext& ctx, const EpochInfo& info) {
  store::RunRecorder& run = ctx.run;
  const int64_t e1 = info.epoch + 1;
  log(ctx, "train/epoch_loss", info.train_loss, e1);
  log(ctx, "train/accuracy", info.train_accuracy, e1);
  log(ctx, "epoch_time_s", info.seconds, e1);
  log(ctx, "eval_time_s", info.eval_seconds, e1);
  log(ctx, "samples_per_s", static_cast<double>(info.samples) / info.seconds, e1);
  log(ctx, "steps_per_s", static_cast<double>(info.steps) / info.seconds, e1);
  const double target = ctx.config.eval.target_accuracy;
  if (target > 0 && !target_reached_ && info.test.accuracy >= target) {
    target_reached_ = true;
    run.log_metric("time_to_target_s", core::monotonic_now() - ctx.start_time, e1);
    run.log_metric("epochs_to_target", static_cast<double>(e1), e1);
    run.set_tag("target_accuracy.reached_at_epoch", std::to_string(e1));
  }
  log(ctx, "epoch", static_cast<double>(e1), ctx.position.step);
}

void MetricsObserver::on_run_end(const RunContext& ctx, const TrainResult& result) {
  if (result.status == store::RunStatus::kFailed) return;
  if (ctx.config.eval.target_accuracy > 0 && !target_reached_)
    ctx.run.set_tag("target_accuracy.reached_at_epoch", "not reached");
}

// A Python script logs its loss and metrics itself: not attached there.
TRAINSCOPE_UNIT(metrics, instrument::Unit{.name = "metrics",
                                          .observers = [](const Config&) -> instrument::Observers {
                                            return {std::make_shared<MetricsObserver>()};
                                          },
                                          .with_own_metrics = false});

}  // namespace trainscope::metrics
