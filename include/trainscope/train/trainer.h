// The training engine: trains a classifier on a dataset per a Config and
// records the run into the store.
//
// Trainer::run() is the training loop and nothing else: one event source
// of an instrument::Instrumentation. Everything around it (metrics,
// fingerprints, profiles, probes, resource samples, predictions) is a unit
// (instrument/unit.h) that the config turns on, the checkpoints are the
// trainer's own observer (observers.h), and a user adds observers with
// add_observer() (a probe subscriber of the user's as a
// probes::ProbeObserver, probes/observer.h). Its run is created by
// instrument::start_run (run_identity.h) from TrainOptions; the trainer adds
// what only it knows: params (the flattened config), tags (torch.threads,
// data files, model.custom) and the environment manifest.
//
// A Trainer is used from one thread and prints nothing: progress displays
// are observers too (the CLI adds one). Ctrl-C (request_stop()) finishes the
// current step, checkpoints and marks the run "stopped".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/instrument/events.h"
#include "trainscope/instrument/gradient_sync.h"
#include "trainscope/instrument/instrumentation.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/models/models.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::train {

// How a Trainer names, starts and records its run, besides the config. Who
// a new run is (name, experiment, parent, tags, command line, code) is the
// RunIdentity it is, as given: a caller that reads the environment
// resolves it first (instrument::resolve_identity, as `trainscope train`
// does); instrument::start_run creates the run. Its experiment, when set,
// becomes the config's run.experiment (recorded in the config text and
// params); store and config_text are the trainer's own (its store, the
// resolved config).
struct TrainOptions : instrument::RunIdentity {
  std::string resume;  // UUID of a run to continue
  // Start a new run from this checkpoint file's state (model, optimizer,
  // RNG, position) instead of from scratch; used to replay steps.
  std::string init_checkpoint;
  bool record_environment = true;  // capture the environment manifest (and the code)
  // Record the run into the trainer's store. False: train with a recorder
  // that records nothing (store::RunRecorder::unrecorded), the trainer's
  // store never touched (it may be null): a data-parallel rank > 0.
  bool record = true;
  // Data-parallel (dist/): this process trains shard `shard` of `shards`
  // of every batch; only one rank writes checkpoints.
  int64_t shard = 0, shards = 1;
  bool write_checkpoints = true;
  // Evaluate the test (and validation) set after each epoch. A data-parallel
  // run's ranks other than 0 do not: their figures are dropped, and rank 0
  // evaluates the same model.
  bool evaluate = true;
  // The process tree that is this training on this host, for the
  // resource monitor (RunContext::process_root); 0: this process.
  int64_t process_root = 0;
  // The step between backward and the observers' on_after_backward that
  // makes the gradients and the step's loss the ones the update applies
  // (instrument/gradient_sync.h): a data-parallel rank's all-reduce, set
  // by train::join_data_parallel. None: this process's own. Held shared.
  std::shared_ptr<instrument::GradientSync> gradient_sync;
  // Optional: called once the data is loaded and before the run is
  // created, with the steps this run will train (the config's epochs of
  // `batches_per_epoch` batches, at most train.max_steps); it may refuse
  // (throw Error) a training too short for the caller's purpose
  // (`trainscope profile`: none past the warm-up).
  std::function<void(int64_t steps, int64_t batches_per_epoch)> check_steps;
};

// The training loop (see the file comment): owned and used by one thread.
// Holds the store shared; observers and the model given to it are held
// shared until it is destroyed.
class Trainer {
 public:
  // Keeps `config`, `store` and `options`; checks, loads and creates nothing
  // until run().
  Trainer(config::Config config, std::shared_ptr<store::Store> store, TrainOptions options = {});
  // Releases the model, the observers and the store it holds.
  ~Trainer();

  // Trains a model of the user's own instead of config.model.name. Its
  // parameters are still initialised by config.model.init from the init
  // stream unless `keep_init` is true.
  void set_model(std::shared_ptr<models::Classifier> model, bool keep_init = false);
  // Adds an observer, called after the built-in recorders (and the
  // gradient sync's observers) and before the checkpoint writer, in the
  // order added (see observers.h).
  void add_observer(std::shared_ptr<instrument::TrainObserver> observer);

  // Runs training to the end (or until stopped) and returns the outcome.
  // Throws Error on bad input; the run is then marked failed.
  instrument::TrainResult run();

  // The model after run() (for tests and examples).
  std::shared_ptr<models::Classifier> model() const { return model_; }

  // The state of one run(), private to the train component (session.h).
  struct Session;

 private:
  using Events = instrument::Instrumentation;
  std::unique_ptr<Session> open_session();
  void open_run(Session& s);
  // The trainer as a source of events for its units (source.cc).
  std::unique_ptr<instrument::Source> make_source(Session& s);
  bool train_epoch(Session& s, Events& events);
  void train_step(Session& s, Events& events, instrument::Step& step, int64_t batch_index);
  void backward_and_update(Session& s, Events& events, instrument::Step& step);
  void end_epoch(Session& s, Events& events, double started, const instrument::Step& totals);
  void finish(Session& s, Events& events, bool stopped);

  config::Config config_;
  std::shared_ptr<store::Store> store_;
  TrainOptions options_;
  std::vector<std::shared_ptr<instrument::TrainObserver>> user_observers_;
  std::shared_ptr<models::Classifier> model_;
  bool keep_init_ = false;
};

// Evaluates `model` on `data` in batches of `batch_size` (eval mode, no
// gradients; the training mode is restored).
instrument::EvalResult evaluate(models::Classifier& model, const data::Dataset& data,
                                const data::DataSplits& splits, int64_t batch_size,
                                torch::ScalarType dtype, bool channels_last = false);

// Asks every running Trainer in this process to stop after its current step
// (async-signal-safe).
void request_stop();
// Whether request_stop() was called in this process (a flag that is never
// cleared); async-signal-safe.
bool stop_requested();

// Evaluates a recorded run's checkpoint (default: the newest) on its test set.
struct CheckpointEval {
  std::string checkpoint;
  instrument::EvalResult result;
  std::vector<std::string> class_names;
};
// Rebuilds the run's model and data from its recorded config (applying its
// compute and determinism settings to this process), loads the checkpoint
// and evaluates the test set. Throws Error(kUsage) when the run has no
// recorded config, Error(kNotFound) listing the checkpoints when it has
// none of that name, and what reading the data or checkpoint throws.
CheckpointEval evaluate_run(store::Store& store, const store::RunInfo& run,
                            const std::string& checkpoint = {});

// Empty when `run` is a training whose recorded config trainscope can train
// again (resume, rerun); else what it is instead, for a message: "a `watch`
// run", "a study", "a `numerics` run", "a run without a recorded training
// config".
std::string not_a_training(store::Store& store, const store::RunInfo& run);

}  // namespace trainscope::train
