// Running a study: its parent run, its trainings as child processes,
// retries, resume and status.
//
// The study is a run (experiment = the study's name, kind=study tag) whose
// children are its trainings, named as planned ("cell/r3"). A planned run is
// done when a child of that name finished; nothing finished is run again.
// A child that stopped or was killed after a checkpoint continues from it
// (`train --resume`); one that failed is retried as a new run, up to
// `retries` times.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/store/store.h"
#include "trainscope/study/executor.h"
#include "trainscope/study/spec.h"

namespace trainscope::study {

struct StudyOptions {
  std::string store_uri;           // the store the children write to
  std::filesystem::path program;   // the trainscope executable
  std::filesystem::path log_dir;   // empty: trainscope-studies/<study uuid8>
  int workers = 0;                 // 0: the spec's, else cores / threads_per_run
  std::string executor = "local";  // "local" or "slurm"
  std::string partition;           // slurm: empty for the cluster's default
  int array_parallelism = 0;       // slurm: tasks at once, 0: no limit
  bool quick = false;
  std::string command_line;
};

struct Progress {
  int total = 0, done = 0, failed = 0, running = 0, retried = 0, skipped = 0;
  double elapsed_s = 0;
  double eta_s = -1;  // < 0 until a run has finished
  std::string event;  // what just happened, e.g. "adam/r2 finished in 41.2s"
};
using ProgressFn = std::function<void(const Progress&)>;

struct Outcome {
  std::string study;  // UUID
  Progress progress;
  bool complete() const { return progress.done == progress.total; }
};

// The workers a study gets: the spec's, else physical cores / threads per run.
int default_workers(const StudySpec& spec);

// Creates the study's run and runs every planned training.
Outcome run_study(std::shared_ptr<store::Store> store, const StudySpec& spec,
                  const StudyOptions& options, const ProgressFn& progress);

// Runs what study `ref` has not finished (skips finished, continues
// stopped, retries failed).
Outcome resume_study(std::shared_ptr<store::Store> store, const std::string& ref,
                     const StudyOptions& options, const ProgressFn& progress);

// The training that planned run `name` of study `ref` needs now (a new run,
// or the resume of a stopped one); nullopt when it has finished. What a
// Slurm task runs (`trainscope study task STUDY NAME`), so that a requeued
// task continues instead of starting over.
std::optional<Job> planned_task(store::Store& store, const std::string& ref,
                                const std::string& name, const StudyOptions& options);

// The spec a study recorded, re-read from its text.
StudySpec recorded_spec(store::Store& store, const store::RunInfo& study);

struct CellStatus {
  std::string cell;
  int planned = 0, finished = 0, running = 0, failed = 0, pending = 0;
};

struct StudyStatus {
  store::RunInfo study;
  std::vector<CellStatus> cells;
  CellStatus total;
  double mean_run_s = 0;  // of finished runs
  // Studies run through Slurm: their array jobs and what Slurm's queue
  // holds of them by state (empty once every task ended).
  std::vector<std::string> slurm_jobs;
  std::map<std::string, int> slurm_queue;
  std::string slurm_error;  // squeue could not be asked
};

StudyStatus study_status(store::Store& store, const std::string& ref);

// Finds a study by reference; throws if `ref` is a run that is not a study.
store::RunInfo resolve_study(store::Store& store, const std::string& ref);

}  // namespace trainscope::study
