// A run of a training loop of the user's own (instrument/run.h).
#include "trainscope/instrument/run.h"

#include <torch/torch.h>

#include <cmath>
#include <exception>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/torch.h"

namespace trainscope::instrument {

Run::Run(std::shared_ptr<store::Store> store, const Config& config, Source& source,
         RunOptions options)
    : config_(config), store_(std::move(store)), uncaught_(std::uncaught_exceptions()) {
  check_units(config_, source);  // before the run exists
  RunIdentity given = options;
  // What only the loop knows, under the tags given.
  given.tags.emplace("model.custom", "true");
  given.tags.emplace("torch.threads", std::to_string(torch::get_num_threads()));
  RunIdentity id = resolve_identity(std::move(given), read_run_environment());
  // The run's experiment (given, or the environment's) is its config's.
  if (!id.experiment.empty()) config_.run.experiment = id.experiment;
  id.experiment = config_.run.experiment;
  id.config_text = config::to_yaml(config_);
  std::optional<env::Manifest> environment;
  if (options.record_environment) environment = env::capture_run_environment({});
  recorder_ = start_run(store_, id, std::move(environment));
  // The model is the source's, whatever the config's model section says.
  auto params = config::flatten(config_);
  params["model.name"] = source.model_name();
  recorder_->set_params(params);
  events_ = std::make_unique<Instrumentation>(config_, *recorder_, source, position_,
                                              std::move(options.observers));
}

Run::~Run() {
  if (ended_) return;
  TrainResult r{uuid(), store::RunStatus::kFailed, position_.step};
  try {
    events_->run_failed(r);
    recorder_->end(store::RunStatus::kFailed);
  } catch (const std::exception& e) {
    core::log_warn("while ending run {} as failed: {}", core::short_uuid(uuid()), e.what());
  }
}

void Run::begin(int64_t total_steps, int64_t batches_per_epoch) {
  RunContext& ctx = events_->context();
  started_ = core::monotonic_now();
  ctx.start_time = started_;
  ctx.total_steps = total_steps;
  ctx.batches_per_epoch = batches_per_epoch;
  ctx.first_step = position_.step;
  events_->run_begin();
}

void Run::epoch_begin() {
  epoch_steps_ = 0;
  epoch_started_ = core::monotonic_now();
  events_->epoch_begin();
}

void Run::batch_begin() {
  recorder_->check();  // a run deleted or taken over stops its loop
  events_->batch_begin();
}

Step Run::next_step(torch::Tensor inputs, torch::Tensor targets, double lr) const {
  return Step{.epoch = position_.epoch,
              .batch = position_.batch,
              .number = position_.step + 1,
              .samples = targets.defined() ? targets.size(0) : 0,
              .lr = lr,
              .inputs = std::move(inputs),
              .targets = std::move(targets)};
}

void advance(TrainPosition& position, Step& step) {
  step.loss_value = step.loss.defined() ? step.loss.item<double>() : NAN;
  if (step.targets.defined()) step.samples = step.targets.size(0);
  ++position.step;
  ++position.batch;
  if (std::isfinite(step.loss_value)) {
    position.epoch_loss_sum += step.loss_value * static_cast<double>(step.samples);
    if (step.output.defined() && step.targets.defined())
      position.epoch_correct += step.output.argmax(1).eq(step.targets).sum().item<int64_t>();
    position.epoch_seen += step.samples;
  }
}

void Run::after_step(Step& step) {
  advance(position_, step);
  ++epoch_steps_;
  events_->after_step(step);
}

void Run::epoch_end(EpochInfo info) {
  const double seen = static_cast<double>(position_.epoch_seen);
  info.epoch = position_.epoch;
  if (info.train_loss == 0 && seen > 0) info.train_loss = position_.epoch_loss_sum / seen;
  if (info.train_accuracy == 0 && seen > 0)
    info.train_accuracy = static_cast<double>(position_.epoch_correct) / seen;
  if (info.samples == 0) info.samples = position_.epoch_seen;
  if (info.steps == 0) info.steps = epoch_steps_;
  if (info.seconds == 0) info.seconds = core::monotonic_now() - epoch_started_;
  position_ = TrainPosition{.epoch = position_.epoch + 1, .step = position_.step};
  events_->epoch_end(info);
}

TrainResult Run::end(store::RunStatus status) {
  TrainResult r{uuid(), status, position_.step, position_.epoch};
  r.seconds = core::monotonic_now() - started_;
  ended_ = true;
  try {
    events_->train_end(r);
    events_->run_end(r);
  } catch (...) {
    r.status = store::RunStatus::kFailed;
    events_->run_failed(r);
    recorder_->end(store::RunStatus::kFailed);
    throw;
  }
  recorder_->end(status);
  return r;
}

}  // namespace trainscope::instrument
