// The training loop's own observer: the checkpoint writer. Every run's
// other capabilities are units (instrument/unit.h) in their own folders:
// profile (first: its clock brackets the step), metrics, fingerprint,
// monitor, predictions, probes; the Trainer then adds the user's observers
// (Trainer::add_observer) and, last, its checkpoint writer (a checkpoint
// holds what all others saw).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/instrument/events.h"
#include "trainscope/models/models.h"
#include "trainscope/optim/optim.h"

namespace trainscope::train {

// Writes checkpoints as artifacts of the run: the initial state of a fresh
// run (so that `diff` can replay from step 0), every checkpoint.every_steps
// steps inside an epoch, every checkpoint.every_epochs epochs, and the final
// state of a run that finishes or stops. Metrics are flushed first, so what
// a checkpoint holds is never ahead of the store.
class CheckpointObserver : public instrument::TrainObserver {
 public:
  // What a checkpoint holds besides the position: the Trainer's model,
  // optimizer and dropout stream (they must outlive the observer).
  CheckpointObserver(models::Classifier& model, optim::Optimizer& optimizer,
                     const at::Generator& dropout)
      : model_(model), optimizer_(optimizer), dropout_(dropout) {}
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_batch_end(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void on_epoch_end(const instrument::RunContext& ctx, const instrument::EpochInfo& epoch) override;
  void on_train_end(const instrument::RunContext& ctx,
                    const instrument::TrainResult& result) override;

 private:
  void write(const instrument::RunContext& ctx);
  models::Classifier& model_;
  optim::Optimizer& optimizer_;
  const at::Generator& dropout_;
  int64_t last_step_ = -1;
};

}  // namespace trainscope::train
