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

#include "trainscope/instrument/run_identity.h"
#include "trainscope/store/store.h"
#include "trainscope/study/executor.h"
#include "trainscope/study/spec.h"

namespace trainscope::study {

// The --set lines a training of planned run `run` gets, the experiment
// first (`trainscope train --experiment`), later ones winning.
std::vector<std::string> training_sets(const StudySpec& spec, const PlannedRun& run);

// What a command study hands planned run `run` (in $TRAINSCOPE_PLANNED),
// recorded as that run's config text: the command and the run's settings,
// as YAML. Its hash tells `study resume --replan` whether a run still is
// what the plan trains.
std::string command_run_text(const StudySpec& spec, const PlannedRun& run);

// The plans a study may have before a flag confirms it: beyond this many
// runs `study run` refuses, with the count and the estimated time.
constexpr uint64_t kDefaultMaxRuns = 10000;

// How run_study and resume_study run a study's trainings.
struct StudyOptions {
  std::string store_uri;           // the store the children write to
  std::filesystem::path program;   // the trainscope executable
  std::filesystem::path log_dir;   // empty: trainscope-studies/<study uuid8>
  int workers = 0;                 // 0: the spec's, else cores / threads_per_run
  std::string executor = "local";  // "local" or "slurm"
  std::string partition;           // slurm: empty for the cluster's default
  int array_parallelism = 0;       // slurm: tasks at once, 0: no limit
  bool quick = false;
  // local: fork each training from a warm worker (executor.h) instead of
  // starting `trainscope train` from nothing.
  bool warm = true;
  // That worker, when start_early_worker started it before planning.
  WorkerProcess early_worker;
  std::string command_line;
  uint64_t max_runs = kDefaultMaxRuns;  // refuse larger plans
  // study resume: plan again from the study's files as they are now
  // instead of refusing when they changed since the study was planned.
  bool replan = false;
};

// Counts of a study's planned runs so far, and what just happened.
struct Progress {
  int total = 0, done = 0, failed = 0, running = 0, retried = 0, skipped = 0;
  double elapsed_s = 0;
  double eta_s = -1;  // < 0 until a run has finished
  std::string event;  // what just happened, e.g. "adam/r2 finished in 41.2s"
  // Failed runs whose last attempt ended without recording a run, and the
  // first of them: "init/r1 (exit 0)".
  int recorded_nothing = 0;
  std::string recorded_nothing_first;
  // Planned runs left alone because another process is training them now
  // (their newest attempt runs, its writer alive), and the first of them.
  int elsewhere = 0;
  std::string elsewhere_first;
};
// Called by the study's thread (never concurrently) after every change.
using ProgressFn = std::function<void(const Progress&)>;

// What a study came to: its run and the last progress.
struct Outcome {
  std::string study;  // UUID
  Progress progress;
  // Whether every planned run finished.
  bool complete() const { return progress.done == progress.total; }
};

// The workers a study gets: the spec's, else physical cores / threads per run.
int default_workers(const StudySpec& spec);

// The size of a study's plan and how long it would take.
struct PlanEstimate {
  uint64_t runs = 0;
  int workers = 1;
  // Mean seconds of a finished training of the study's experiment in the
  // store (earlier studies of the same name), and how many it is from;
  // run_s < 0 when there is none.
  double run_s = -1;
  int from_runs = 0;
  // Estimated seconds for the whole plan on `workers`; -1 when unknown.
  double total_s() const { return run_s < 0 ? -1 : run_s * static_cast<double>(runs) / workers; }
};
// The plan's size and, from up to 200 finished trainings of the study's
// experiment in the store, its expected time. Reads only.
PlanEstimate estimate_plan(store::Store& store, const StudySpec& spec, const StudyOptions& options);
// "320,000 runs on 2 worker(s): about 44h at 1.0s a run (the mean of 31
// earlier run(s))", or that there is nothing to estimate from.
std::string estimate_text(const PlanEstimate& estimate);

// Plans a study from its file: resolves the base config (the trainer's,
// config/config.h, which is torch-free: planning never loads libtorch),
// checks every planned run's config, and refuses (Error kUsage, with the
// count and the estimated time) a plan of more than options.max_runs runs
// before anything is built or recorded.
StudySpec plan_study(store::Store& store, StudySpec spec, const StudyOptions& options);

// The command line of a study's warm worker (`PROGRAM study worker --fd 3`).
std::vector<std::string> worker_argv(const StudyOptions& options);
// For a local warm study of the trainer, starts its worker now, before the
// study is planned (`study` as loaded, before planning): planning loads
// libtorch here while the worker loads it there. Sets
// options.early_worker; run_study adopts it. Does nothing for other studies.
void start_early_worker(const StudySpec& study, StudyOptions& options);

// Creates the study's run, recording the planned spec (its resolved base
// among it), and runs every planned training.
Outcome run_study(std::shared_ptr<store::Store> store, const StudySpec& spec,
                  const StudyOptions& options, const ProgressFn& progress);

// Runs what study `ref` has not finished (skips finished, continues
// stopped, retries failed), exactly as it was planned. When the study file
// or its base config changed on disk since, refuses (Error kConflict,
// naming the first key that differs) unless options.replan.
Outcome resume_study(std::shared_ptr<store::Store> store, const std::string& ref,
                     const StudyOptions& options, const ProgressFn& progress);

// The training that planned run `name` of study `ref` needs now (a new run,
// or the resume of a stopped one); nullopt when it has finished. What a
// Slurm task runs (`trainscope study task STUDY NAME`), so that a requeued
// task continues instead of starting over.
std::optional<Job> planned_task(store::Store& store, const std::string& ref,
                                const std::string& name, const StudyOptions& options);

// The spec a study recorded, re-read from its text alone (no file is read).
StudySpec recorded_spec(store::Store& store, const store::RunInfo& study);
// Refuses (Error kConflict, naming `study resume`) a study whose name the
// store already holds: running its file again would train every run twice
// and make the name ambiguous. run_study() checks it; a caller may check
// first, before it plans.
void check_name_free(store::Store& store, const StudySpec& spec);
// A training that names `parent` as its parent: when the parent is a study,
// `name` must be one of its planned runs and `config_sha256` (the hash the
// run records: its plan's, else its config text's) the one the study plans
// for it (a run outside the plan, or another config under a planned name,
// would be counted as the study's own). Throws Error(kConflict) saying so.
// The check of the kind "study" (instrument::register_parent_kind): every
// run that names a parent is admitted through it (instrument::start_run).
void check_planned_child(store::Store& store, const store::RunInfo& parent, const std::string& name,
                         const std::string& config_sha256);
// The hash the run the plan `spec` trains as `p` records: kPlannedTag of a
// command study's run, the config hash of a training's.
std::string planned_hash(const StudySpec& spec, const PlannedRun& p);

// The tag a study sets on an attempt of a planned run that a later attempt
// (or a new plan) replaced; its value names what replaced it. Readers count
// each planned run once by leaving such runs out.
inline constexpr const char* kSupersededTag = "study.superseded_by";
// The SHA-256 of $TRAINSCOPE_PLANNED, tagged on a planned child of a command
// study (instrument/run_identity.h): `trainscope train`'s config text is
// the training's own.
inline constexpr const char* kPlannedTag = instrument::kPlannedTag;

// The tag a study sets on the failed run it records for a planned run whose
// last attempt ended without recording any run (its command never called
// trainscope, or the training died before it started); its value says how
// the attempt ended and where its log is.
inline constexpr const char* kRecordedNothingTag = "study.recorded_nothing";

// The tag a study sets on the last attempt of a planned run it gave up on
// (its retries spent) when that attempt's run is not failed (a script that
// exited without ending its run leaves it killed): every reader counts the
// planned run failed, and the value says why.
inline constexpr const char* kGaveUpTag = "study.gave_up";

// The tag a study sets on a planned run's finished run when the job's
// process then ended badly (a script that raised or called sys.exit(3)
// after its run finished): the run counts finished, its record being
// whole; the value says how the process ended ("exited 3").
inline constexpr const char* kJobEndedTag = "study.job_ended";

// One planned run of a study and its runs in the store.
struct PlannedAttempts {
  PlannedRun planned;
  // Its attempts, oldest first, without those set aside (kSupersededTag).
  std::vector<store::RunInfo> attempts;
  // The run that stands for it: its newest finished attempt, else its
  // newest attempt; nullptr when it has none.
  const store::RunInfo* counted() const;
};

// A study's runs as every reader counts them. `study status`, `study
// report`, `stats --study` (and `stats` of the study's experiment), the
// dashboard's runs table and study pages, and counted_children() all read
// this, so that they count the same runs: each planned run once, through
// its counted run.
struct StudyRuns {
  store::RunInfo study;
  StudySpec spec;                        // the recorded plan
  std::vector<PlannedAttempts> planned;  // in plan order
  // Children no reader counts: attempts tagged kSupersededTag, a planned
  // run's attempts other than its counted one (tagged or not), and runs
  // the recorded plan does not name; newest first.
  std::vector<store::RunInfo> set_aside;
  // The counted run of every planned run that has one, in plan order.
  std::vector<store::RunInfo> counted() const;
  // Those of them that finished: what a report and `stats --study` summarise.
  std::vector<store::RunInfo> results() const;
};

// The one place that decides which of a study's children count (above).
StudyRuns study_runs(store::Store& store, const store::RunInfo& study);

// Of `runs` (any runs, in any order), those every reader counts, order
// kept: a run tagged kSupersededTag never; a study's child only when it is
// the counted run of one of its planned runs (study_runs); any other run.
std::vector<store::RunInfo> counted_runs(store::Store& store, std::vector<store::RunInfo> runs);

// How many children a run has as readers count them: for a study, its
// planned runs that have a counted run (study_runs); for another run, its
// children not tagged kSupersededTag.
int64_t counted_children(store::Store& store, const std::string& parent_uuid);

// The finished runs trained with `run`'s config but for its seeds (the
// same config hash, or the same params but seeds.*) as every reader counts
// them (counted_runs), newest first: what `checklist` counts as the run's
// repeats. nullopt for a run that is no training with
// a config to repeat: a study's own run (its config is its plan), or a run
// that recorded no config (a watched program, an import).
std::optional<std::vector<store::RunInfo>> repeats_of(store::Store& store,
                                                      const store::RunInfo& run);

// One cell's planned runs by state (study_status).
struct CellStatus {
  std::string cell;
  int planned = 0, finished = 0, running = 0, failed = 0, pending = 0;
  // Running in the store, but their writer is gone or silent (see
  // store::liveness): a writer's next open marks them killed.
  int stale = 0;
};

// What study_status returns: a plain value.
struct StudyStatus {
  store::RunInfo study;
  store::Liveness liveness;  // of the study's own run
  std::vector<CellStatus> cells;
  CellStatus total;
  double mean_run_s = 0;  // of finished runs; NaN when none finished
  // Failed planned runs whose last attempt recorded no run (tagged
  // kRecordedNothingTag), and one such tag's value: what to tell the user.
  int recorded_nothing = 0;
  std::string recorded_nothing_example;
  // Failed planned runs whose last run is tagged kGaveUpTag, and one such
  // tag's value.
  int gave_up = 0;
  std::string gave_up_example;
  int set_aside = 0;  // StudyRuns::set_aside: children no reader counts
  // Studies run through Slurm: their array jobs and what Slurm's queue
  // holds of them by state (empty once every task ended).
  std::vector<std::string> slurm_jobs;
  std::map<std::string, int> slurm_queue;
  std::string slurm_error;  // squeue could not be asked
};

// What a study's runs are doing, cell by cell, from the store alone. A
// reader: it judges no run and changes nothing.
StudyStatus study_status(store::Store& store, const std::string& ref);

// Finds a study by reference; throws if `ref` is a run that is not a study.
store::RunInfo resolve_study(store::Store& store, const std::string& ref);

}  // namespace trainscope::study
