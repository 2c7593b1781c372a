// The training loop. Setup (data, model, the run) comes first; then run()
// walks epochs and steps and raises the events of events.h; everything
// else happens in observers.
#include "trainscope/train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cmath>
#include <csignal>

#include "session.h"
#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/instrument/instrumentation.h"
#include "trainscope/train/observers.h"
#include "trainscope/train/torch_env.h"

namespace trainscope::train {
using core::ErrorKind;
using core::fail;
using data::Batch;
using data::channels_last;
using data::dtype_of;
using data::EpochLoader;
using models::Classifier;
using optim::scheduled_lr;
using store::RunStatus;

namespace {
volatile std::sig_atomic_t g_stop = 0;

// compute.autocast over the forward pass and the loss, as torch.autocast
// does: the device's autocast on with the run's type, and off again (with
// its cache of lowered weights dropped) when the scope ends.
class AutocastScope {
 public:
  AutocastScope(std::optional<at::ScalarType> type, at::DeviceType device)
      : device_(device), on_(type.has_value()) {
    if (!on_) return;
    was_enabled_ = at::autocast::is_autocast_enabled(device);
    was_type_ = at::autocast::get_autocast_dtype(device);
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::set_autocast_dtype(device, *type);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, was_type_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  at::DeviceType device_;
  bool on_, was_enabled_ = false;
  at::ScalarType was_type_ = at::kFloat;
};

}  // namespace

void request_stop() { g_stop = 1; }
bool stop_requested() { return g_stop != 0; }

Trainer::Trainer(config::Config config, std::shared_ptr<store::Store> store, TrainOptions options)
    : config_(std::move(config)), store_(std::move(store)), options_(std::move(options)) {}
Trainer::~Trainer() = default;

void Trainer::set_model(std::shared_ptr<Classifier> model, bool keep_init) {
  model_ = std::move(model);
  keep_init_ = keep_init;
}

void Trainer::add_observer(std::shared_ptr<instrument::TrainObserver> observer) {
  user_observers_.push_back(std::move(observer));
}

instrument::TrainResult Trainer::run() {
  std::unique_ptr<Session> s = open_session();
  Session& ss = *s;
  // The registered units' observers, the gradient sync's, the user's, then
  // the checkpoint writer.
  instrument::GradientSync* sync = options_.gradient_sync.get();
  instrument::Observers observers;
  if (sync) observers = sync->observers();
  observers.insert(observers.end(), user_observers_.begin(), user_observers_.end());
  std::vector<std::shared_ptr<instrument::TrainObserver>> writers;
  if (options_.write_checkpoints)
    writers.push_back(std::make_shared<CheckpointObserver>(*model_, *ss.opt, ss.dropout_gen));
  Events events(ss.cfg, *ss.run, *ss.source, ss.pos, observers, writers);
  instrument::RunContext& ctx = events.context();
  // The sync's end, once, however run() leaves from here.
  struct EndSync {
    instrument::GradientSync* sync;
    const instrument::RunContext& ctx;
    ~EndSync() {
      if (sync) sync->end(ctx);
    }
  } end_sync{sync, ctx};
  ctx.start_time = ss.t_start;
  ctx.total_steps = ss.total_steps;
  ctx.batches_per_epoch = ss.batches_per_epoch;
  ctx.first_step = ss.pos.step;
  ctx.resumed = ss.resumed;
  ctx.from_checkpoint = !options_.init_checkpoint.empty();
  ctx.process_root = options_.process_root;
  try {
    if (sync) sync->begin(ctx);  // may write the model: before any observer sees it
    events.run_begin();
    while (ss.pos.epoch < ss.cfg.train.epochs && train_epoch(ss, events)) {
    }
    finish(ss, events, ss.stopped);
  } catch (...) {
    ss.result.status = RunStatus::kFailed;
    events.run_failed(ss.result);
    try {
      ss.run->end(RunStatus::kFailed);
    } catch (const std::exception&) {
    }
    throw;
  }
  ss.result.seconds = core::monotonic_now() - ss.t_start;
  return ss.result;
}

// Trains the rest of the epoch at s.pos. False when the run ends inside it
// (max_steps reached or a stop requested).
bool Trainer::train_epoch(Session& s, Events& events) {
  const double started = core::monotonic_now();
  model_->train();
  EpochLoader loader(s.data.train, s.loader, s.pos.epoch, s.seeds.data_order, s.seeds.augment,
                     s.pos.batch);
  events.epoch_begin();
  instrument::Step totals;  // samples and steps of this epoch
  while (s.pos.batch < loader.num_batches()) {
    instrument::Step step{.epoch = s.pos.epoch, .batch = s.pos.batch, .number = s.pos.step + 1};
    events.batch_begin();
    events.phase(instrument::StepPhase::kData);
    std::optional<Batch> batch = loader.next();
    // On a GPU: pinned by the loader, copied while the GPU still works on
    // the previous step (the stream orders the copy before the forward).
    const bool async = s.device.is_cuda();
    step.inputs = batch->x.to(s.device, /*non_blocking=*/async);
    step.targets = batch->y.to(s.device, /*non_blocking=*/async);
    step.batch_samples = batch->batch_samples;
    train_step(s, events, step, batch->index);
    events.batch_end(step);
    totals.samples += step.batch_samples > 0 ? step.batch_samples : step.samples;
    ++totals.number;
    s.max_steps_reached = s.cfg.train.max_steps > 0 && s.pos.step >= s.cfg.train.max_steps;
    s.stopped = stop_requested() || events.context().stop_requested();
    if (s.max_steps_reached || s.stopped) return false;
  }
  end_epoch(s, events, started, totals);
  return true;
}

// One optimizer step on step.inputs, raising the step's events.
void Trainer::train_step(Session& s, Events& events, instrument::Step& step, int64_t batch_index) {
  events.phase(instrument::StepPhase::kZeroGrad);
  step.lr = scheduled_lr(s.cfg, s.pos.epoch, s.pos.step);
  s.opt->set_lr(step.lr);
  s.opt->zero_grad();
  {
    AutocastScope autocast(s.autocast, s.device.type());
    events.phase(instrument::StepPhase::kForward);
    step.output = model_->forward(step.inputs);
    events.phase(instrument::StepPhase::kLoss);
    step.loss = torch::nn::functional::cross_entropy(step.output, step.targets);
  }
  events.after_forward(step);
  backward_and_update(s, events, step);
  events.phase(instrument::StepPhase::kRecording);
  step.loss_value = step.loss.item<double>();
  step.samples = step.targets.size(0);
  instrument::TrainPosition& pos = s.pos;
  const bool fatal = !std::isfinite(step.loss_value) && s.cfg.train.on_nan == "fail";
  const std::string last_finite =
      pos.epoch_seen > 0
          ? core::format_double(pos.epoch_loss_sum / static_cast<double>(pos.epoch_seen))
          : std::string("none this epoch");
  ++pos.step;
  pos.batch = batch_index + 1;
  if (!fatal) {
    pos.epoch_loss_sum += step.loss_value * static_cast<double>(step.samples);
    pos.epoch_correct += step.output.argmax(1).eq(step.targets).sum().item<int64_t>();
    pos.epoch_seen += step.samples;
  }
  if (options_.gradient_sync) options_.gradient_sync->after_update(events.context(), step);
  events.after_step(step);
  if (fatal)
    fail(ErrorKind::kRuntime,
         "loss became {} at step {} (epoch {}); the last finite loss was {}; lower optimizer.lr "
         "or set train.on_nan: continue",
         core::format_double(step.loss_value), pos.step, pos.epoch + 1, last_finite);
}

// Backward (on the scaled loss under fp16), the data-parallel sync, and the
// update, which fp16's loss scale skips when the gradients overflowed.
void Trainer::backward_and_update(Session& s, Events& events, instrument::Step& step) {
  // Data-parallel: the gradients and the loss become the global batch's
  // here, so that every observer sees what the update applies.
  instrument::GradientSync* sync = options_.gradient_sync.get();
  if (sync) sync->before_backward(events.context(), step);
  events.phase(instrument::StepPhase::kBackward);
  if (s.scaler) {
    step.loss_scale = s.scaler->value();
    s.scaler->scale(step.loss).backward();
  } else {
    step.loss.backward();
  }
  if (sync) sync->synchronize(events.context(), step);
  // Observers see the gradients the update applies: unscaled.
  if (s.scaler) step.skipped = !s.scaler->unscale(model_->parameters());
  events.after_backward(step);
  events.phase(instrument::StepPhase::kUpdate);
  if (!step.skipped) s.opt->step();
  if (s.scaler) {
    s.scaler->update();
    s.pos.loss_scale = s.scaler->value();
    s.pos.scale_growth = s.scaler->good_steps();
  }
}

// Evaluates the finished epoch and moves the position to the next one.
void Trainer::end_epoch(Session& s, Events& events, double started,
                        const instrument::Step& totals) {
  instrument::TrainPosition& pos = s.pos;
  instrument::EpochInfo info;
  info.epoch = pos.epoch;
  info.seconds = core::monotonic_now() - started;
  info.samples = totals.samples;
  info.steps = totals.number;
  const double seen = static_cast<double>(std::max<int64_t>(1, pos.epoch_seen));
  info.train_loss = pos.epoch_loss_sum / seen;
  info.train_accuracy = static_cast<double>(pos.epoch_correct) / seen;
  const int64_t e1 = pos.epoch + 1;
  const auto dtype = dtype_of(s.cfg);
  const bool nhwc = channels_last(s.cfg);
  const double eval_started = core::monotonic_now();
  if (options_.evaluate) {
    info.test = evaluate(*model_, s.data.test, s.data, s.cfg.eval.batch_size, dtype, nhwc);
    events.evaluation_end(instrument::Evaluation{"test", e1, info.test});
  }
  if (options_.evaluate && s.data.val.size() > 0) {
    info.val = evaluate(*model_, s.data.val, s.data, s.cfg.eval.batch_size, dtype, nhwc);
    events.evaluation_end(instrument::Evaluation{"val", e1, *info.val});
  }
  info.eval_seconds = core::monotonic_now() - eval_started;
  s.result.test = info.test;
  s.result.tested = options_.evaluate;
  s.result.epochs_completed = e1;
  pos = instrument::TrainPosition{.epoch = e1,
                                  .step = pos.step,
                                  .loss_scale = pos.loss_scale,
                                  .scale_growth = pos.scale_growth};
  events.epoch_end(info);
}

void Trainer::finish(Session& s, Events& events, bool stopped) {
  // Stopped by max_steps inside an epoch: evaluate and record the final
  // model anyway, under the number of the epoch in progress.
  if (s.max_steps_reached && s.pos.batch > 0 && options_.evaluate) {
    s.result.test = evaluate(*model_, s.data.test, s.data, s.cfg.eval.batch_size, dtype_of(s.cfg),
                             channels_last(s.cfg));
    s.result.tested = true;
    events.evaluation_end(instrument::Evaluation{"test", s.pos.epoch + 1, s.result.test});
  }
  s.result.steps = s.pos.step;
  s.result.status = stopped ? RunStatus::kStopped : RunStatus::kFinished;
  events.train_end(s.result);
  events.run_end(s.result);
  s.run->end(s.result.status);
}

}  // namespace trainscope::train
