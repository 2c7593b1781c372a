// TensorBoard both ways: recorded runs out as TensorBoard log folders
// (`runs export --format tfevents`), and the scalars of event files others
// wrote into the store as runs (`import tfevents`). Torch-free; the file
// format is tfevents'. Depends on core, store, probes (its histograms),
// tfevents.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::tensorboard {

// How a scalar is written.
enum class ScalarType {
  // A DT_DOUBLE tensor with the scalars plugin's metadata: TensorBoard
  // shows it as any scalar and `import tfevents` reads back every value
  // bit for bit (the default).
  kDouble,
  // simple_value, float32: what every reader of event files knows; values
  // are rounded to float32 (and those beyond its range become infinite).
  kFloat32,
};

// "double" or "float32"; throws Error(kUsage) naming the choices.
ScalarType parse_scalar_type(const std::string& name);

// Where and how export_runs writes.
struct ExportOptions {
  std::filesystem::path dir;  // one log folder per run is made inside
  ScalarType scalars = ScalarType::kDouble;
  bool histograms = true;  // the probes' histograms, where a run has them
};

// One run export_runs wrote.
struct ExportedRun {
  std::string uuid;
  std::filesystem::path file;  // the event file written
  int64_t points = 0;          // scalar events
  int64_t histograms = 0;      // histogram events
};

// The folder of each run inside the export folder, in order: the run's name
// with '/' separating folders (as the import names runs: "keras/train"),
// every other byte outside [A-Za-z0-9._-] as '_', empty parts dropped and
// "." or ".." as "_" or "__" (its UUID when nothing is left), and "-" and the
// UUID's first 8 characters after a name an earlier run of the list has.
std::vector<std::string> run_folders(const std::vector<store::RunInfo>& runs);

// Writes each run into `options.dir`/<run_folders()>/events.out.tfevents.
// <time>.<host>: every point of every metric key (tag = key, step, wall
// time = the point's time) and, unless turned off, every probe histogram.
// Refuses (Error(kConflict), before writing anything) when a run's folder
// already holds an event file, which TensorBoard would merge with the new
// one. `progress` is called after each run with the number done.
std::vector<ExportedRun> export_runs(store::Store& store, const std::vector<store::RunInfo>& runs,
                                     const ExportOptions& options,
                                     const std::function<void(size_t)>& progress = {});

// Where import_tfevents looks and how it names what it records.
struct ImportOptions {
  std::filesystem::path dir;           // searched recursively for event files
  std::string experiment = "default";  // the imported runs' experiment
  std::string command_line;            // recorded as each run's command line
};

// One folder of event files: one run.
struct ImportedRun {
  std::filesystem::path folder;
  std::string name;  // the run's name (of the run already there, when skipped)
  std::string uuid;
  int64_t files = 0;
  int64_t points = 0;
  int64_t skipped_values = 0;  // summary values that are not scalars
  // True when a run imported from the same files is already in the store:
  // nothing was written for this folder.
  bool already_imported = false;
};

// Imports every folder under `options.dir` (itself included) that holds
// event files (is_event_file) as one finished run: named by the folder's
// path relative to `dir` ("." is `dir`'s own name), made unique as default
// names are ("train-2"); metric points of every scalar tag, with their
// step, wall time and value as double, in file-name order; start and end
// times the first and last wall time of its events; tags "import.source"
// (the folder's absolute path) and "import.sha256" (of its files' names and
// bytes).
//
// Every file is read and checked (both CRCs of every record) before
// anything is written: a damaged file refuses the whole import with
// Error(kUsage) naming the file and the record's byte offset, and the store
// is unchanged. A folder whose files a finished run was imported from
// already (same "import.sha256") is skipped, not imported twice; a folder
// imported before whose files have changed since is refused
// (Error(kConflict), naming the run to delete first). A run is written as
// run, points, then its tags, and deleted again if a write fails, so that
// a failed folder leaves no partial run; a run left by an import that was
// killed midway (no "import.sha256" tag yet) is replaced.
std::vector<ImportedRun> import_tfevents(store::Store& store, const ImportOptions& options);

}  // namespace trainscope::tensorboard
