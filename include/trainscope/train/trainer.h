// The training engine: trains a classifier on a dataset per a Config and
// records everything into the store (params = the flattened config, step and
// epoch metrics, checkpoints as artifacts).
//
// Metrics recorded (step = global optimizer step for step metrics, epoch
// number starting at 1 for epoch metrics):
//   step:  train/loss, lr
//   epoch: train/epoch_loss, train/accuracy, test/loss, test/accuracy,
//          test/macro_f1, test/top5 (> 5 classes), val/* (with a validation
//          split), epoch_time_s, samples_per_s, time_to_first_batch_s
//
// A Trainer is used from one thread. Ctrl-C (request_stop()) finishes the
// current step, checkpoints and marks the run "stopped".
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"
#include "trainscope/train/config.h"
#include "trainscope/train/models.h"

namespace trainscope::train {

// The handle a user's own loop records through.
using Run = store::RunRecorder;

struct StepInfo {
  int64_t epoch = 0;        // 0-based
  int64_t batch = 0;        // index within the epoch
  int64_t step = 0;         // global step, 1-based after the update
  double loss = 0;
  double lr = 0;
};

struct EvalResult {
  int64_t samples = 0;
  double loss = 0;
  double accuracy = 0;
  double macro_f1 = 0;
  double top5 = -1;                     // -1 when there are <= 5 classes
  double roc_auc = -1;                  // two-class problems only
  std::vector<double> per_class_accuracy;
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted]
};

struct EpochInfo {
  int64_t epoch = 0;  // 0-based
  double train_loss = 0;
  double train_accuracy = 0;
  EvalResult test;
  std::optional<EvalResult> val;
  double seconds = 0;
};

struct TrainCallbacks {
  std::function<void(const StepInfo&)> on_step;
  std::function<void(const EpochInfo&)> on_epoch;
};

struct TrainOptions {
  std::string name;             // run name
  std::string command_line;     // recorded with the run
  std::string resume;           // UUID of a run to continue
  std::string config_path;      // the config file, for the git state of its repository
  // Start a new run from this checkpoint file's state (model, optimizer,
  // RNG, position) instead of from scratch; used to replay steps.
  std::string init_checkpoint;
  bool record_environment = true;  // capture the environment manifest
  bool progress = true;         // progress bar / periodic lines on stderr
};

struct TrainResult {
  std::string run_uuid;
  store::RunStatus status = store::RunStatus::kFinished;
  int64_t steps = 0;
  int64_t epochs_completed = 0;
  EvalResult test;
  double seconds = 0;
};

class Trainer {
 public:
  Trainer(Config config, std::shared_ptr<store::Store> store, TrainOptions options = {});
  ~Trainer();

  // Trains a model of the user's own instead of config.model.name. Its
  // parameters are still initialised by config.model.init from the init
  // stream unless `keep_init` is true.
  void set_model(std::shared_ptr<Classifier> model, bool keep_init = false);
  TrainCallbacks& callbacks() { return callbacks_; }

  // Runs training to the end (or until stopped) and returns the outcome.
  // Throws Error on bad input; the run is then marked failed.
  TrainResult run();

  // The model after run() (for tests and examples).
  std::shared_ptr<Classifier> model() const { return model_; }

 private:
  Config config_;
  std::shared_ptr<store::Store> store_;
  TrainOptions options_;
  TrainCallbacks callbacks_;
  std::shared_ptr<Classifier> model_;
  bool keep_init_ = false;
};

// The tensors a fingerprint hashes, in forward order: for each module in
// registration order, its own parameters then its buffers.
std::vector<std::pair<std::string, torch::Tensor>> fingerprint_tensors(torch::nn::Module& model);

// Asks every running Trainer in this process to stop after its current step
// (async-signal-safe).
void request_stop();
bool stop_requested();

// Evaluates a recorded run's checkpoint (default: the newest) on its test set.
struct CheckpointEval {
  std::string checkpoint;
  EvalResult result;
  std::vector<std::string> class_names;
};
CheckpointEval evaluate_run(store::Store& store, const store::RunInfo& run, const std::string& checkpoint = {});

}  // namespace trainscope::train
