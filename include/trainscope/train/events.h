// Training events: the one seam between the training loop and everything
// that rides on it.
//
// Trainer::run() is the loop and nothing else; metric recording,
// fingerprints, checkpoints, the profiler, the resource sampler, a progress
// display and a user's own instruments are TrainObservers. The loop calls
// every observer, in registration order, on the training thread, at each
// event below. An observer may
//   - read everything in the RunContext and the event (tensors included);
//   - record into the run (ctx.run: metrics, tags, artifacts) and log;
//   - ask the loop to stop after the current step (ctx.request_stop());
// and must not
//   - modify the model's parameters or buffers, the optimizer, the data or
//     the position (the loop, checkpoints and fingerprints rely on them);
//   - keep a tensor reference beyond the call without copying it.
// Observers that need to do heavy work should copy what they need and hand
// it to a thread of their own: every event is on the training step's path.
//
// An exception thrown by an observer ends the run as failed (on_run_end is
// still called on every observer, and the exception propagates out of
// Trainer::run()).
#pragma once

#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/store/run_recorder.h"
#include "trainscope/train/config.h"
#include "trainscope/train/data.h"
#include "trainscope/train/models.h"
#include "trainscope/train/optim.h"

namespace trainscope::train {

// Where the loop is; everything a checkpoint needs to continue exactly.
struct TrainPosition {
  int64_t epoch = 0;          // epoch in progress (0-based)
  int64_t batch = 0;          // next batch within that epoch
  int64_t step = 0;           // optimizer steps done
  double epoch_loss_sum = 0;  // sum of sample losses so far this epoch
  int64_t epoch_correct = 0;  // correctly classified training samples this epoch
  int64_t epoch_seen = 0;     // training samples this epoch
};

// The phases of one training step, in the order the loop enters them.
enum class StepPhase { kData, kZeroGrad, kForward, kLoss, kBackward, kUpdate, kRecording };
const char* to_string(StepPhase p);

struct EvalResult {
  int64_t samples = 0;
  double loss = 0;
  double accuracy = 0;
  double macro_f1 = 0;
  double top5 = -1;     // -1 when there are <= 5 classes
  double roc_auc = -1;  // two-class problems only
  std::vector<double> per_class_accuracy;
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted]
  // Per example, in the split's order: the true class, the predicted class
  // and its logit (what studies compare across runs).
  std::vector<int32_t> labels, predicted;
  std::vector<float> top_logit;
};

// One optimizer step. Filled as the step goes: `output` and `loss` from
// on_after_forward, gradients exist from on_after_backward, the new weights
// and `loss_value` from on_after_step.
struct Step {
  int64_t epoch = 0;    // 0-based
  int64_t batch = 0;    // index within the epoch
  int64_t number = 0;   // the global step this is, 1-based (position.step + 1 before the update)
  int64_t samples = 0;  // batch size
  double lr = 0;
  const Batch* data = nullptr;
  torch::Tensor output;   // logits
  torch::Tensor loss;     // scalar tensor (graph still attached before backward)
  double loss_value = 0;  // NaN before on_after_step
};

// One evaluation of the model on a split.
struct Evaluation {
  std::string split;  // "test" or "val"
  int64_t epoch = 0;  // 1-based epoch the result is recorded under
  const EvalResult& result;
};

struct EpochInfo {
  int64_t epoch = 0;  // 0-based
  double train_loss = 0;
  double train_accuracy = 0;
  EvalResult test;
  std::optional<EvalResult> val;
  double seconds = 0;
  int64_t samples = 0;  // trained on in this session's part of the epoch
  int64_t steps = 0;
};

struct CheckpointInfo {
  int64_t step = 0;
  std::string name;            // artifact name, "checkpoints/step-000000469.pt"
  std::filesystem::path path;  // the stored copy
};

struct TrainResult {
  std::string run_uuid;
  store::RunStatus status = store::RunStatus::kFinished;
  int64_t steps = 0;
  int64_t epochs_completed = 0;
  EvalResult test;
  // Whether `test` holds an evaluation: a run stopped (or resumed and
  // stopped again) before an epoch ended in this process has none.
  bool tested = false;
  double seconds = 0;
};

// What every event sees: the run and the objects training works on. Valid
// from on_run_begin to the end of on_run_end.
class RunContext {
 public:
  const Config& config;
  store::RunRecorder& run;
  Classifier& model;
  Optimizer& optimizer;
  const DataSplits& data;
  const TrainPosition& position;
  const at::Generator& dropout_generator;  // its state is part of a checkpoint
  double start_time = 0;                   // monotonic seconds when Trainer::run began
  int64_t total_steps = 0;                 // steps the run takes if nothing stops it
  int64_t batches_per_epoch = 0;
  int64_t first_step = 0;        // position.step when this session began
  bool resumed = false;          // continues a run recorded by an earlier session
  bool from_checkpoint = false;  // a new run started from a checkpoint's state

  // Asks the loop to stop after the current step; the run ends "stopped".
  void request_stop() const { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }
  // Tells every observer that a checkpoint was written (its writer calls it).
  void publish_checkpoint(const CheckpointInfo& info) const { publish_checkpoint_(info); }

  RunContext(const Config& c, store::RunRecorder& r, Classifier& m, Optimizer& o,
             const DataSplits& d, const TrainPosition& p, const at::Generator& g,
             std::function<void(const CheckpointInfo&)> publish)
      : config(c),
        run(r),
        model(m),
        optimizer(o),
        data(d),
        position(p),
        dropout_generator(g),
        publish_checkpoint_(std::move(publish)) {}

 private:
  mutable std::atomic<bool> stop_requested_{false};
  std::function<void(const CheckpointInfo&)> publish_checkpoint_;
};

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
  // Gradients are in the parameters' .grad(); the optimizer has not stepped.
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
  virtual void on_checkpoint(const RunContext& ctx, const CheckpointInfo& checkpoint) {}
  // Training is over (finished or stopped, not failed) and the run is about
  // to end: the place to save final state (the final checkpoint is written
  // here). result.status is final.
  virtual void on_train_end(const RunContext& ctx, const TrainResult& result) {}
  // The run ends with result.status: finished, stopped or failed. The run's
  // status is set in the store after every observer returned.
  virtual void on_run_end(const RunContext& ctx, const TrainResult& result) {}
};

}  // namespace trainscope::train
