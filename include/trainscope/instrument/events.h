// Training events: the one seam between a training loop and everything
// that rides on it.
//
// A loop raises the events below; metric recording, fingerprints,
// checkpoints, the profiler, the probes, the resource sampler, a progress
// display and a user's own instruments are TrainObservers of them. Any
// loop can be the source: train::Trainer, a user's own libtorch loop, the
// Python package, a data-parallel rank; each drives an Instrumentation
// (instrumentation.h), which calls every observer, in order, on the
// training thread, at each event. What an observer may need beyond the
// events (the model's forward pass, some inputs, the optimizer's state)
// it asks of the Source, which says when it has none. An observer may
//   - read everything in the RunContext and the event (tensors included);
//   - record into the run (ctx.run: metrics, tags, artifacts) and log;
//   - ask the loop to stop after the current step (ctx.request_stop());
// and must not
//   - modify the model's parameters, gradients or buffers, the optimizer,
//     the data or the position (the loop, checkpoints and fingerprints rely
//     on them);
//   - keep a tensor reference beyond the call without copying it.
// No observer changes the training, data-parallel training included: what
// must write (the replicas' common start, the global batch's gradients and
// loss) is a GradientSync the loop calls between its events
// (gradient_sync.h), so observers see what the optimizer applies. Where
// instrument::observer_check_enabled() (builds without NDEBUG, or
// TRAINSCOPE_CHECK_OBSERVERS=1), an observer that writes a parameter or a
// gradient fails the run, named (instrumentation.h).
// Observers that need to do heavy work should copy what they need and hand
// it to a thread of their own: every event is on the training step's path.
//
// An exception thrown by an observer ends the run as failed (on_run_end is
// still called on every observer, and the exception propagates out of
// Trainer::run()).
#pragma once

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/instrument/results.h"
#include "trainscope/store/run_recorder.h"

namespace trainscope::instrument {

// A unit's work in a step that belongs to no layer of the model (the
// data-parallel all-reduce of a bucket) runs in a RECORD_USER_SCOPE named
// kScopeLayerPrefix + NAME; the profiler shows NAME as a layer of its own,
// in the phase the scope runs in.
inline constexpr const char* kScopeLayerPrefix = "layer:";

using config::Config;

// Where the loop is; everything a checkpoint needs to continue exactly.
struct TrainPosition {
  int64_t epoch = 0;          // epoch in progress (0-based)
  int64_t batch = 0;          // next batch within that epoch
  int64_t step = 0;           // optimizer steps done
  double epoch_loss_sum = 0;  // sum of sample losses so far this epoch
  int64_t epoch_correct = 0;  // correctly classified training samples this epoch
  int64_t epoch_seen = 0;     // training samples this epoch
  // fp16 mixed precision (optim/loss_scaler.h): the loss scale and the good
  // steps towards its next growth; 0 when the run has no loss scale.
  double loss_scale = 0;
  int64_t scale_growth = 0;
};

// The phases of one training step, in the order the loop enters them.
enum class StepPhase { kData, kZeroGrad, kForward, kLoss, kBackward, kUpdate, kRecording };
// "data", "zero_grad", "forward", "loss", "backward", "update",
// "recording": a static string (any thread).
const char* to_string(StepPhase p);

// One optimizer step. Filled as the step goes: `output` and `loss` from
// on_after_forward, gradients exist from on_after_backward, the new weights
// and `loss_value` from on_after_step. On a data-parallel rank `loss` is
// its slice's at on_after_forward, and from on_after_backward on it and
// the gradients are the global batch's (the gradient sync ran).
struct Step {
  int64_t epoch = 0;    // 0-based
  int64_t batch = 0;    // index within the epoch
  int64_t number = 0;   // the global step this is, 1-based (position.step + 1 before the update)
  int64_t samples = 0;  // batch size
  // Data-parallel: the samples of the whole batch, of which this rank
  // trains its slice (0: not data-parallel, the batch is `samples`).
  int64_t batch_samples = 0;
  double lr = 0;
  torch::Tensor inputs;   // the batch as the model takes it
  torch::Tensor targets;  // its labels
  torch::Tensor output;   // logits
  torch::Tensor loss;     // scalar tensor (graph still attached before backward)
  double loss_value = 0;  // NaN before on_after_step
  // fp16 mixed precision: the loss scale this step's backward used (0: no
  // scaling), and whether its gradients overflowed, so that the update was
  // skipped (the weights did not change).
  double loss_scale = 0;
  bool skipped = false;
};

// One evaluation of the model on a split.
struct Evaluation {
  std::string split;  // "test" or "val"
  int64_t epoch = 0;  // 1-based epoch the result is recorded under
  const EvalResult& result;
};

// A finished epoch as on_epoch_end sees it: its training loss and accuracy
// over this session's part of the epoch, the test (and validation)
// evaluation, and what it cost. A plain value.
struct EpochInfo {
  int64_t epoch = 0;  // 0-based
  double train_loss = 0;
  double train_accuracy = 0;
  EvalResult test;
  std::optional<EvalResult> val;
  double seconds = 0;       // the epoch's training steps, evaluation excluded
  double eval_seconds = 0;  // evaluating the test (and validation) set after it
  int64_t samples = 0;      // trained on in this session's part of the epoch
  int64_t steps = 0;
};

// A checkpoint just written at optimizer step `step` (on_checkpoint).
struct CheckpointInfo {
  int64_t step = 0;
  std::string name;            // artifact name, "checkpoints/step-000000469.pt"
  std::filesystem::path path;  // the stored copy
};

// What a loop offers its observers besides the events. The model is
// required; the rest is optional, and an observer that needs what its
// source does not have says so (or does without it).
//
// Called on the training thread, between events. Implementations: the
// Trainer's (every method), a user's loop (model and forward at least).
class Source {
 public:
  virtual ~Source() = default;
  // The model being trained; it outlives the run.
  virtual torch::nn::Module& model() = 0;
  // The name of the model, for messages ("demo_cnn", "my_net").
  virtual std::string model_name() const = 0;
  // The model's forward pass on `x` as the loop calls it (logits). Observers
  // call it outside a step (layer facts, a reference batch, a replay).
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // Up to `n` training inputs as the loop feeds them (normalised, its dtype
  // and memory format); undefined when the source has none.
  virtual torch::Tensor train_inputs(int64_t n) { return {}; }
  // Up to `n` test inputs the same way; undefined when none.
  virtual torch::Tensor test_inputs(int64_t n) { return {}; }
  // The model evaluated on up to `n` test examples as the loop evaluates
  // (eval mode, no gradients, no state changed); nullopt when the source
  // has no test set.
  virtual std::optional<EvalResult> evaluate_test(int64_t n) { return std::nullopt; }
  // The optimizer's state tensors with the parameter each belongs to (the
  // profiler charges their updates to that parameter's layer); empty when
  // unknown or when there is no optimizer.
  virtual std::vector<std::pair<torch::Tensor, torch::Tensor>> optimizer_state() { return {}; }
  // The generator the model draws dropout masks from, if any: an observer
  // that replays a forward pass restores its state afterwards.
  virtual std::optional<at::Generator> dropout_generator() { return std::nullopt; }
  // Whether the program records its loss and metrics itself (a Python
  // script logs its own): the units that would record them again
  // (Unit::with_own_metrics false) do not attach.
  virtual bool records_own_metrics() const { return false; }
};

// What every event sees: the run, the source of the events and where the
// loop is. Valid from on_run_begin to the end of on_run_end.
class RunContext {
 public:
  const Config& config;
  store::RunRecorder& run;
  Source& source;
  torch::nn::Module& model;  // source.model()
  const TrainPosition& position;
  double start_time = 0;          // monotonic seconds when the run began in this process
  int64_t total_steps = 0;        // steps the run takes if nothing stops it (0: unknown)
  int64_t batches_per_epoch = 0;  // 0: unknown
  int64_t first_step = 0;         // position.step when this session began
  bool resumed = false;           // continues a run recorded by an earlier session
  bool from_checkpoint = false;   // a new run started from a checkpoint's state
  // The process tree that is this training on this host, which the
  // resource monitor samples: 0, this process; a data-parallel launcher's
  // pid, whose tree holds every local rank.
  int64_t process_root = 0;

  // Asks the loop to stop after the current step; the run ends "stopped".
  void request_stop() const { stop_requested_ = true; }
  // Whether request_stop() was called; request_stop and stop_requested are
  // atomic, so an observer's own thread may call them too.
  bool stop_requested() const { return stop_requested_; }
  // Tells every observer that a checkpoint was written (its writer calls it).
  void publish_checkpoint(const CheckpointInfo& info) const { publish_checkpoint_(info); }

  // Made by Instrumentation: every reference is held, not copied, and must
  // outlive the context; `publish` raises on_checkpoint.
  RunContext(const Config& c, store::RunRecorder& r, Source& s, const TrainPosition& p,
             std::function<void(const CheckpointInfo&)> publish)
      : config(c),
        run(r),
        source(s),
        model(s.model()),
        position(p),
        publish_checkpoint_(std::move(publish)) {}

 private:
  mutable std::atomic<bool> stop_requested_{false};
  std::function<void(const CheckpointInfo&)> publish_checkpoint_;
};

// An observer of the events above (see the file comment for what it may
// and must not do). Every method is called on the training thread, in the
// order the source raises the events; the defaults do nothing.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // The run exists (new or resumed), the model and optimizer are ready, no
  // step of this session has run.
  virtual void on_run_begin(const RunContext& ctx) {}
  // ctx.position.epoch is the epoch that begins.
  virtual void on_epoch_begin(const RunContext& ctx) {}
  // A batch is about to be fetched; ctx.position.batch is its index.
  virtual void on_batch_begin(const RunContext& ctx) {}
  // A phase of the step begins (kData first, kRecording last).
  virtual void on_phase(const RunContext& ctx, StepPhase phase) {}
  // The forward pass and the loss are computed; backward has not run.
  virtual void on_after_forward(const RunContext& ctx, const Step& step) {}
  // Gradients are in the parameters' .grad() (synchronised, when the loop
  // has a gradient sync); the optimizer has not stepped.
  virtual void on_after_backward(const RunContext& ctx, const Step& step) {}
  // The optimizer stepped: new weights, ctx.position counts this step.
  virtual void on_after_step(const RunContext& ctx, const Step& step) {}
  // Every observer has seen on_after_step; nothing of this step remains.
  virtual void on_batch_end(const RunContext& ctx, const Step& step) {}
  // The model was evaluated on a split (at each epoch end, and at the end
  // of a run stopped inside an epoch).
  virtual void on_evaluation_end(const RunContext& ctx, const Evaluation& evaluation) {}
  // A full epoch ended and was evaluated (after its on_evaluation_end);
  // ctx.position already points at the start of the next epoch.
  virtual void on_epoch_end(const RunContext& ctx, const EpochInfo& epoch) {}
  // A checkpoint was written and stored (ctx.publish_checkpoint).
  virtual void on_checkpoint(const RunContext& ctx, const CheckpointInfo& checkpoint) {}
  // Training is over (finished or stopped, not failed) and the run is about
  // to end: the place to save final state (the final checkpoint is written
  // here). result.status is final.
  virtual void on_train_end(const RunContext& ctx, const TrainResult& result) {}
  // The run ends with result.status: finished, stopped or failed. The run's
  // status is set in the store after every observer returned.
  virtual void on_run_end(const RunContext& ctx, const TrainResult& result) {}
};

}  // namespace trainscope::instrument
