// The observers every Trainer::run() gets from its config. They record what
// a run is: its metrics, fingerprints, profiles, resource samples and
// checkpoints. Trainer composes them as
//
//   ProfilingObserver    profile.enabled (first: its clock brackets the step)
//   MetricsObserver      always
//   FingerprintObserver  fingerprint.every_steps > 0
//   SamplingObserver     monitor.interval_s > 0
//   PredictionsObserver  always
//   ProbeObserver        probes.preset != off, or probe subscribers added
//                        (probe_observer.h)
//   ... the user's observers (Trainer::add_observer), in the order added ...
//   CheckpointObserver   always (last: a checkpoint holds what all others saw)
//
// Each is usable on its own by a loop of the user's that raises the same
// events.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/monitor/sampler.h"
#include "trainscope/study/predictions.h"
#include "trainscope/train/events.h"

namespace trainscope::profile {
class IterationProfiler;
struct IterationProfile;
}  // namespace trainscope::profile

namespace trainscope::train {

// Metrics (step = global optimizer step for step metrics, the 1-based epoch
// for epoch metrics):
//   step:  train/loss, lr, train/step_ms (every train.log_every_steps; a
//          loss that fails the run is recorded whatever the step),
//          time_to_first_batch_s. train/step_ms is the wall time of the
//          whole step: fetching the batch to the last observer of it.
//   eval:  <split>/loss, <split>/accuracy, <split>/macro_f1, <split>/top5
//          (> 5 classes), <split>/roc_auc (2 classes); split test or val
//   epoch: train/epoch_loss, train/accuracy, epoch_time_s, samples_per_s,
//          steps_per_s, epoch (at the global step), time_to_target_s and
//          epochs_to_target once eval.target_accuracy is reached
// Tag target_accuracy.reached_at_epoch: the epoch, or "not reached".
//
// A resumed run replays the steps after its last checkpoint: a point whose
// key already has a point at that step or later is a replay and is not
// recorded again (one point per step and key).
class MetricsObserver : public TrainObserver {
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

// Hashes every parameter and buffer (fingerprint_tensors order) and the loss
// every fingerprint.every_steps steps, for `diff` and `rerun --verify`.
class FingerprintObserver : public TrainObserver {
 public:
  void on_run_begin(const RunContext& ctx) override;
  void on_after_step(const RunContext& ctx, const Step& step) override;

 private:
  std::vector<std::pair<std::string, torch::Tensor>> tensors_;
};

// Per-layer profiles (profile/profiler.h) of the steps profile.warmup_steps
// + 1 + k * profile.every, kept in memory and written at the end of the run
// so that store I/O never lands inside a measured step. Records
// profile/step_ms_profiled or profile/step_ms_unprofiled for every step,
// profile/coverage per profiled step, the layers' facts, and the first
// profiled step as a Chrome trace artifact.
class ProfilingObserver : public TrainObserver {
 public:
  ProfilingObserver();
  ~ProfilingObserver() override;
  void on_run_begin(const RunContext& ctx) override;
  void on_batch_begin(const RunContext& ctx) override;
  void on_phase(const RunContext& ctx, StepPhase phase) override;
  void on_batch_end(const RunContext& ctx, const Step& step) override;
  void on_run_end(const RunContext& ctx, const TrainResult& result) override;

 private:
  bool profiled(const Config& c, int64_t step) const;
  void save(const RunContext& ctx);

  std::unique_ptr<profile::IterationProfiler> profiler_;
  std::vector<profile::IterationProfile> profiles_;
  bool active_ = false;  // the current step is profiled
  double step_start_ = 0;
};

// Samples the process, the machine, GPUs and energy counters into the run
// (monitor/sampler.h) from on_run_begin to on_run_end.
class SamplingObserver : public TrainObserver {
 public:
  void on_run_begin(const RunContext& ctx) override;
  void on_run_end(const RunContext& ctx, const TrainResult& result) override;

 private:
  std::unique_ptr<monitor::ResourceSampler> sampler_;
};

// The final test predictions (class and top logit per example) as the
// artifact predictions/test.bin (study/predictions.h), for studies.
class PredictionsObserver : public TrainObserver {
 public:
  void on_evaluation_end(const RunContext& ctx, const Evaluation& evaluation) override;
  void on_train_end(const RunContext& ctx, const TrainResult& result) override;

 private:
  study::Predictions last_;
};

// Writes checkpoints as artifacts of the run: the initial state of a fresh
// run (so that `diff` can replay from step 0), every checkpoint.every_steps
// steps inside an epoch, every checkpoint.every_epochs epochs, and the final
// state of a run that finishes or stops. Metrics are flushed first, so what
// a checkpoint holds is never ahead of the store.
class CheckpointObserver : public TrainObserver {
 public:
  void on_run_begin(const RunContext& ctx) override;
  void on_batch_end(const RunContext& ctx, const Step& step) override;
  void on_epoch_end(const RunContext& ctx, const EpochInfo& epoch) override;
  void on_train_end(const RunContext& ctx, const TrainResult& result) override;

 private:
  void write(const RunContext& ctx);
  int64_t last_step_ = -1;
};

}  // namespace trainscope::train
