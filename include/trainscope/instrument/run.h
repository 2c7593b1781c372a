// A run of a training loop of the user's own. It creates the run in a store
// (instrument::start_run, who it is from its options and the environment:
// run_identity.h; a study's command that runs the loop makes it the
// planned run) and records what makes it reproducible (the resolved config
// as its text and params, the environment manifest with libtorch's part,
// tags), owns its recorder and its Instrumentation (every unit the config
// turns on, then the caller's observers), keeps the loop's position, and
// is driven by the loop:
//
//   instrument::RunOptions options;
//   options.name = "my-net";
//   instrument::Run run(store, config, source, options);
//   run.begin(total_steps, batches_per_epoch);
//   for each epoch:  run.epoch_begin();
//     for each batch:
//       run.batch_begin();
//       run.phase(kData);     ... fetch x, y ...
//       Step step = run.next_step(x, y, lr);
//       run.phase(kZeroGrad); opt.zero_grad();
//       run.phase(kForward);  step.output = model->forward(x);
//       run.phase(kLoss);     step.loss = cross_entropy(step.output, y);
//       run.after_forward(step);
//       run.phase(kBackward); step.loss.backward(); run.after_backward(step);
//       run.phase(kUpdate);   opt.step();
//       run.phase(kRecording); run.after_step(step); run.batch_end(step);
//     run.evaluation_end(...); run.epoch_end(...);
//   run.end();
//
// Required: begin, then per step batch_begin, next_step, after_step and
// batch_end, then end. The rest is optional; a unit that needs an event
// the loop does not raise does without it (events.h says which need what):
// phases for the profiler, after_forward for the probes' activations and
// the loss's origin of a NaN, after_backward for gradients,
// evaluation_end for test predictions and overfitting alerts.
//
// Destroyed without end() (an exception left the loop), the run is marked
// failed; after end() nothing more may be raised. Threads: every method on
// the loop's thread. Ownership: `source` must outlive the Run.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "trainscope/instrument/instrumentation.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::instrument {

// How a Run names and records its run (besides the config): who the run is,
// as given (the Run adds the environment's: resolve_identity; an
// experiment, given or the environment's, becomes the config's
// run.experiment, else the config's is the run's; config_text is the
// Run's own, the resolved config), and what else it records.
struct RunOptions : RunIdentity {
  // The machine, libtorch, the BLAS, threads (and the code at code_path).
  bool record_environment = true;
  Observers observers;  // the caller's own, after every unit's
};

// Counts `step` into `position` as a loop that just stepped: the position
// moves on, the step's loss (set into step.loss_value from step.loss) and,
// when step.output and step.targets are given, its correct predictions
// join the epoch's. What Run::after_step and any other source do.
void advance(TrainPosition& position, Step& step);

// One run of a loop (see the file comment): used from the loop's thread
// only; owns its recorder and Instrumentation, holds the store shared and
// `source` by reference.
class Run {
 public:
  // Creates the run (status running) and its instruments. Throws
  // Error(kUsage) for a config the units refuse for this source (probes
  // that select no layer), before anything is recorded.
  Run(std::shared_ptr<store::Store> store, const Config& config, Source& source,
      RunOptions options = {});
  // Without end(): raises on_run_end (status failed) on every observer and
  // ends the run failed; failures doing so are logged, never thrown.
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // The run's UUID, config and position; references valid while the Run is.
  const std::string& uuid() const { return recorder_->uuid(); }
  // The run's recorder (metrics, tags, artifacts of the loop's own); valid
  // while the Run is.
  store::RunRecorder& recorder() { return *recorder_; }
  const Config& config() const { return config_; }
  const TrainPosition& position() const { return position_; }
  // The context every observer sees; valid while the Run is.
  const RunContext& context() { return events_->context(); }

  // `total_steps` and `batches_per_epoch`, when known, let units plan
  // (0: unknown).
  void begin(int64_t total_steps = 0, int64_t batches_per_epoch = 0);
  // Raises on_epoch_begin; seconds and steps of the epoch count from here.
  void epoch_begin();
  // Raises on_batch_begin. First throws what stopped the recording
  // (RunRecorder::check: Error(kNotFound) for a deleted run, LeaseLost for a
  // run taken over), so that the loop stops instead of training unrecorded.
  void batch_begin();
  // Raises on_phase.
  void phase(StepPhase p) { events_->phase(p); }
  // The step about to run on a batch: its epoch, batch and number from the
  // position, the inputs, targets and learning rate.
  Step next_step(torch::Tensor inputs, torch::Tensor targets, double lr = 0) const;
  // Raise on_after_forward and on_after_backward as they are.
  void after_forward(const Step& step) { events_->after_forward(step); }
  void after_backward(const Step& step) { events_->after_backward(step); }
  // Counts the step (the position moves on; its loss and, when `step.output`
  // is given, its correct predictions join the epoch's), sets
  // step.loss_value and step.samples from the step, then raises the event.
  void after_step(Step& step);
  // Raise on_batch_end and on_evaluation_end as they are.
  void batch_end(const Step& step) { events_->batch_end(step); }
  void evaluation_end(const Evaluation& e) { events_->evaluation_end(e); }
  // Ends the epoch: what `info` leaves 0 (train loss and accuracy, samples,
  // steps, seconds since epoch_begin) comes from the position, and the
  // position moves to the next epoch.
  void epoch_end(EpochInfo info = {});
  // Training is over: raises train_end and run_end and ends the run with
  // `status` (finished or stopped). Returns what it recorded.
  TrainResult end(store::RunStatus status = store::RunStatus::kFinished);
  // Whether an observer asked the loop to stop (ctx.request_stop()).
  bool stop_requested() { return events_->context().stop_requested(); }

 private:
  Config config_;
  std::shared_ptr<store::Store> store_;
  std::unique_ptr<store::RunRecorder> recorder_;
  TrainPosition position_;
  std::unique_ptr<Instrumentation> events_;
  double started_ = 0, epoch_started_ = 0;
  int64_t epoch_steps_ = 0;
  bool ended_ = false;
  int uncaught_ = 0;
};

}  // namespace trainscope::instrument
