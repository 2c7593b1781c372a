// Who a run is, decided in one place for every event source that starts
// one: train::Trainer (its TrainOptions are a RunIdentity), instrument::Run
// (a loop of the user's; its RunOptions are one too), the Python package
// (src/python/run.h) and `watch` (monitor/watch.h). A RunIdentity holds
// what the caller was given (its arguments); resolve_identity() adds what
// the environment says; start_run() alone creates the run.
//
// Precedence: what the caller was given, else the environment
// ($TRAINSCOPE_EXPERIMENT, $TRAINSCOPE_RUN_NAME, $TRAINSCOPE_TAGS, as W&B's
// WANDB_* and MLflow's MLFLOW_* variables), else the caller's default (a
// training's config for the experiment, the config file's or the script's
// name). Tags of both are kept; a given tag wins over the environment's of
// the same key.
//
// One exception, the study's planned-child protocol. A study runs the
// command of each planned run with $TRAINSCOPE_PARENT (the study's UUID),
// $TRAINSCOPE_RUN_NAME (the planned run's name), $TRAINSCOPE_EXPERIMENT
// (the study's name), $TRAINSCOPE_STORE and $TRAINSCOPE_PLANNED (what it
// planned for the run, as YAML) in its environment. A run started there
// that names no parent of its own and resumes nothing is that planned run:
// the study's name, parent, experiment and store win over the caller's (a
// script's own default must not take its run out of the study); it
// records the plan's SHA-256 as the tag kPlannedTag (`study resume
// --replan` compares it with the plan) and, without a config text of its
// own, the plan as its config text. A parent of a registered kind admits
// a child only by its rule: a study (study/runner.cc) only the runs it
// plans, whoever names it as the parent.
//
// Threads: any; read_run_environment() reads the process's environment
// (no thread may change it meanwhile), register_parent_kind() runs while
// the program loads. Built without libtorch (libtrainscope).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "trainscope/env/manifest.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::instrument {

// The tag a study's planned child records: the SHA-256 of what the study
// planned for it ($TRAINSCOPE_PLANNED), which is not its config text when
// it has one of its own (`trainscope train`'s).
inline constexpr const char* kPlannedTag = "study.planned_sha256";

// What the environment says of a run: each variable's value, "" when it is
// unset or empty.
struct RunEnvironment {
  std::string experiment;                   // $TRAINSCOPE_EXPERIMENT
  std::string name;                         // $TRAINSCOPE_RUN_NAME
  std::map<std::string, std::string> tags;  // $TRAINSCOPE_TAGS: "k=v,k2=v2"
  std::string parent;                       // $TRAINSCOPE_PARENT: a study's UUID
  std::string planned;                      // $TRAINSCOPE_PLANNED: the study's plan (YAML)
};

// Reads the variables. Throws Error(kUsage) naming the variable for an
// experiment or a name the name rule refuses (store/accept.h), and for an
// item of TRAINSCOPE_TAGS that is not key=value or whose key or value the
// rule refuses. Once this process has started the planned run
// (start_run), the planned run's variables (name, parent, plan) read as
// unset: they name one run, and a script's later start_run(name=...)
// records a run of its own, as the program of `watch` does.
RunEnvironment read_run_environment();

// Who a run is (see the file comment). Filled by the caller with what it
// was given (empty: not given) and its defaults; resolve_identity() fills
// in the environment's; start_run() creates the run from it.
struct RunIdentity {
  // The store's URI, for a caller that opens its store by the identity
  // (the Python package); empty: $TRAINSCOPE_STORE, else the default
  // store. Callers handed a store (a Trainer, a Run) leave it alone.
  std::string store;
  std::string experiment;          // empty: default_experiment
  std::string default_experiment;  // empty: "default"
  std::string name;                // empty: default_name
  // The name when none is given nor in the environment ("demo" of
  // demo.yaml, the script's name); empty: a run without a name.
  std::string default_name;
  // A default name is made unique ("demo-2", "demo-3", ... when "demo" is
  // taken); `watch` names each run after its program as it is.
  bool unique_default = true;
  std::string parent;  // the parent run: a UUID, a UUID prefix or a name
  std::map<std::string, std::string> tags;
  std::string command_line;  // recorded with the run
  std::string config_text;   // recorded with the run (its config_hash is its SHA-256)
  // A file or folder whose git work tree the run records as its code
  // (record_code, code.h); empty: none.
  std::string code_path;
  // Set by resolve_identity() for a study's planned child: what the study
  // planned for it ($TRAINSCOPE_PLANNED; "" when unset).
  std::optional<std::string> planned;
};

// `given` with what `env` adds (see the file comment): a planned child's
// name, parent, experiment (when the environment has one), store (empty:
// the study's, $TRAINSCOPE_STORE) and plan; otherwise the environment's
// name and experiment where `given` has none. The environment's tags join
// the given ones, which win a key. A run that is `resuming` is never a
// planned child. Pure: reads nothing, throws nothing.
RunIdentity resolve_identity(RunIdentity given, const RunEnvironment& env, bool resuming = false);

// The parent `id` names, resolved in `store`, once it admits the child
// under its name (`id.name`, else `id.default_name`); nullopt when `id`
// names none. Throws what Store::resolve_run throws for a parent it cannot
// resolve (Error kNotFound; kConflict for an ambiguous prefix) and what
// the check of the parent's kind throws (a study refuses a run it does not
// plan: Error kConflict, saying so).
std::optional<store::RunInfo> admitted_parent(store::Store& store, const RunIdentity& id);

// Creates the run `id` names in `store`, status running: its experiment
// and name (or their defaults; a default name made unique when
// id.unique_default), its parent (admitted_parent), command line, config
// text (a planned child's plan when it has none) and tags (a planned child
// with a parent also kPlannedTag). With `environment`, the run's
// environment manifest is it with the code's git state added (record_code
// of id.code_path, when set: a dirty tree's diff and untracked files'
// names become artifacts; an entry of `environment` wins over one of the
// code's), recorded when not empty; without, neither is recorded.
// Throws what admitted_parent throws, and Error(kUsage) for a name or an
// experiment the name rule refuses, before the run exists. The recorder
// holds `store` shared.
std::unique_ptr<store::RunRecorder> start_run(std::shared_ptr<store::Store> store,
                                              const RunIdentity& id,
                                              std::optional<env::Manifest> environment = {});
// The failed run that stands for a planned child of `parent` (a study's
// planned run `name`, in `experiment`) whose process ended without
// recording any run, so that every reader counts it failed: created ended,
// with tag `tag` set to `why`. The one place besides start_run that makes
// a run. Throws what the store throws.
store::RunInfo record_planned_failure(store::Store& store, const std::string& parent,
                                      const std::string& experiment, const std::string& name,
                                      const std::string& tag, const std::string& why);

// The run of a process that trains what another records (a data-parallel
// rank > 0: rank 0 records the run): the same name, experiment and config,
// a recorder that records nothing (store::RunRecorder::unrecorded), no
// parent looked up, no store touched. Throws what unrecorded throws.
std::unique_ptr<store::RunRecorder> start_unrecorded_run(const RunIdentity& id);

// How a kind of parent run (its tag kind=KIND) admits a child: throws (an
// Error saying why) to refuse `name`, whose recorded config hash (its
// plan's, kPlannedTag, else its config text's) is `config_sha256`, as a
// child of `parent`.
using ChildCheck = void (*)(store::Store& store, const store::RunInfo& parent,
                            const std::string& name, const std::string& config_sha256);
// Registers `check` for parents tagged kind=`kind` (study/runner.cc
// registers "study"), replacing an earlier one; returns true, for a static
// initializer. Call it while the program loads (not thread-safe).
bool register_parent_kind(const std::string& kind, ChildCheck check);

}  // namespace trainscope::instrument
