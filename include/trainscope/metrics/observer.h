// Metrics as a unit of any run: what every event source records of its
// training, from the events alone (instrument/events.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trainscope/instrument/events.h"

namespace trainscope::metrics {

using instrument::Config;
using instrument::EpochInfo;
using instrument::EvalResult;
using instrument::Evaluation;
using instrument::RunContext;
using instrument::Step;
using instrument::StepPhase;
using instrument::TrainResult;

// Metrics (step = global optimizer step for step metrics, the 1-based epoch
// for epoch metrics):
//   step:  train/loss, lr, train/step_ms (every train.log_every_steps; a
//          loss that fails the run is recorded whatever the step),
//          time_to_first_batch_s. train/step_ms is the wall time of the
//          whole step: fetching the batch to the last observer of it.
//   eval:  <split>/loss, <split>/accuracy, <split>/macro_f1, <split>/top5
//          (> 5 classes), <split>/roc_auc (2 classes); split test or val
//   epoch: train/epoch_loss, train/accuracy, epoch_time_s, eval_time_s, samples_per_s,
//          steps_per_s, epoch (at the global step), time_to_target_s and
//          epochs_to_target once eval.target_accuracy is reached
// Tag target_accuracy.reached_at_epoch: the epoch, or "not reached".
//
// A resumed run replays the steps after its last checkpoint: a point whose
// key already has a point at that step or later is a replay and is not
// recorded again (one point per step and key).
class MetricsObserver : public instrument::TrainObserver {
 public:
  void on_run_begin(const RunContext& ctx) override;
  void on_batch_begin(const RunContext& ctx) override;
  void on_phase(const RunContext& ctx, StepPhase phase) override;
  void on_after_step(const RunContext& ctx, const Step& step) override;
  void on_batch_end(const RunContext& ctx, const Step& step) override;
  void on_evaluation_end(const RunContext& ctx, const Evaluation& evaluation) override;
  void on_epoch_end(const RunContext& ctx, const EpochInfo& epoch) override;
  void on_run_end(const RunContext& ctx, const TrainResult& result) override;

 private:
  void log(const RunContext& ctx, const std::string& key, double value, int64_t step);
  bool target_reached_ = false;
  double step_start_ = 0;
  std::map<std::string, int64_t> recorded_until_;  // resumed runs: last step per key
};

}  // namespace trainscope::metrics
