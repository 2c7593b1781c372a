// MLflow both ways: recorded runs into an MLflow tracking store (`runs
// export --format mlflow URI`) and MLflow's runs into the store (`import
// mlflow URI`). Torch-free. MLflow's own client does MLflow's half, in a
// Python that has the mlflow package (TRAINSCOPE_PYTHON, else python3 on
// PATH), running python/trainscope/_mlflow_bridge.py; this side reads and
// writes trainscope's store and hands runs over as JSON files.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::mlflow {

// The Python that runs MLflow's half and the bridge script it runs.
struct Bridge {
  std::string python;            // TRAINSCOPE_PYTHON, else "python3"
  std::filesystem::path script;  // _mlflow_bridge.py
};

// The bridge for the program at `exe` (the CLI: the package folder beside
// its bin/, or build/python in a build tree). Throws Error(kUsage) saying
// how to get one when no script is found.
Bridge find_bridge(const std::filesystem::path& exe);

// Where export_runs writes.
struct ExportOptions {
  std::string uri;  // sqlite:///mlflow.db, a folder (MLflow's file store), http(s)://...
};

// What became of one run.
struct ExportedRun {
  std::string uuid;
  std::string mlflow_run_id;
  int64_t points = 0, artifacts = 0;
  bool already = false;  // exported whole before: left as it is
};

// Writes `runs` (parents before their children) into the MLflow store: one
// MLflow run per run in the experiment of its name (made when missing),
// params, tags, every metric point (step; value bit for bit but +-inf,
// which MLflow's SQLite store keeps as +-DBL_MAX, and -0.0, kept as 0.0;
// wall time to the millisecond, MLflow's unit), artifacts, status and times, a study's
// runs as children (mlflow.parentRunId), and the run's own facts as tags
// `trainscope.run.*` (UUID, host, pid, status, exact start and end,
// command line, config hash, parent). A run exported whole before is left
// as it is; one whose export was cut short, or that had not ended, is
// replaced. Every key and value is checked by MLflow's own rules before
// anything is written (Error(kUsage) naming the run and key).
std::vector<ExportedRun> export_runs(store::Store& store, const std::vector<store::RunInfo>& runs,
                                     const ExportOptions& options, const Bridge& bridge);

// What import_runs reads and how it records it.
struct ImportOptions {
  std::string uri;                       // the MLflow tracking URI
  std::vector<std::string> experiments;  // MLflow experiments to read (default: all)
  std::string experiment;                // the runs' experiment here (default: MLflow's name)
  std::string command_line;              // recorded on each run
};

// What became of one MLflow run.
struct ImportedRun {
  std::string mlflow_run_id;          // MLflow's run id
  std::string uuid, name;             // the run here (the one there already, when skipped)
  int64_t points = 0, artifacts = 0;  // metric points and artifact files written
  std::string skipped;                // why it was not imported ("" when it was)
};

// Reads every run of the MLflow store (or of `experiments`) and records
// each as a run: its name, status, times, params, tags (MLflow's own
// `mlflow.*` among them), every metric point (step, value, timestamp as
// unix seconds) and artifacts; a child (mlflow.parentRunId) under its
// parent. A run trainscope exported comes back as it was (its UUID, host,
// pid, status, exact start and end, command line; `trainscope.run.*`
// tags dropped). Everything is read and checked by store/accept.h's rules
// before anything is written. Skipped, and said so: a run imported before
// (tag import.mlflow_run_id), a run trainscope exported from this store
// (its UUID is here), a run MLflow still has running. A run an import cut
// short is replaced.
std::vector<ImportedRun> import_runs(store::Store& store, const ImportOptions& options,
                                     const Bridge& bridge);

}  // namespace trainscope::mlflow
