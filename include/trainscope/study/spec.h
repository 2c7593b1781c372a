// A study: many trainings of one base config, planned from a YAML file.
//
//   study: seeds                 # its name (the experiment of its runs)
//   base: ../demo.yaml           # the base config, relative to this file
//   set: {train.epochs: 2}       # overrides for every run
//   grid:                        # factors: every combination is a cell
//     optimizer.name: [adam, sgd]
//     seeds.master: [0, 180698, 314, 3407, 42]
//   replicates: 5                # runs per cell
//   vary: implementation         # what changes between a cell's replicates
//   deterministic: true          # plus one exact-repeat cell per grid cell
//   workers: auto                # processes at once (auto: cores / threads)
//   threads_per_run: 1           # compute.threads of every run
//   retries: 2                   # a failed run is retried this many times
//   quick: {set: {...}, grid: {...}, replicates: 2}   # what --quick changes
//
// or, instead of base, a command of one's own (a PyTorch script with the
// trainscope package, say), run by /bin/sh in the study file's folder:
//
//   command: python3 train.py --epochs 2
//
// Each planned run of a command study is that command with the run's
// settings in its environment (study/README.md, "Studies of a script"):
// the script reads them with trainscope.config() and its run joins the
// study as the planned child.
//
// or, instead of a grid, the randomness sources varied one at a time:
//
//   sources: [init, data_order, augment, dropout, implementation, all,
//             world_size, bitflip, kernels, precision, deterministic]
//
// Torch-free: what a key means is the trainer's business; the study only
// writes `--set key=value` lines (the CLI checks them against the trainer's
// config before any run starts).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::study {

// What varies between the replicates of a cell.
//   none            exact repeats (audited for bit-identity by fingerprints)
//   init, data_order, augment, dropout   that seed stream (seeds.<source>)
//   all             the master seed: every stream at once
//   implementation  threads, BLAS threads and oneDNN on/off, cycled
//   bitflip         the lowest bit of one initial weight (model.flip_bit)
//   kernels         nothing but the kernels: every seed fixed, a GPU's
//                   non-deterministic kernels (atomics) allowed; on a CPU
//                   its runs repeat exactly
//   precision       float32, TensorFloat-32 and bfloat16 autocast in turn
//                   (compute.tf32, compute.autocast)
//   a config key    set to 1, 2, 3, ... per replicate
const std::vector<std::string>& source_names();

// One factor of a grid: a config key and the values it takes, in order;
// or a factor of named levels, each setting several keys (grid:
// {optimizer: {adadelta: {optimizer.name: adadelta}, nesterov:
// {optimizer.name: sgd, optimizer.nesterov: true}}}): `key` its name,
// `values` the levels' names, `level_sets` what each level sets.
struct Factor {
  std::string key;
  std::vector<std::string> values;
  std::vector<std::vector<std::pair<std::string, std::string>>> level_sets;  // parallel to values
};

// A study as its file says it (load_study, parse_recorded): a plain
// value.
struct StudySpec {
  std::string name;
  std::filesystem::path file;  // the study file
  std::filesystem::path base;  // the base config (absolute); empty in a command study
  std::string command;         // instead of base: a shell command line, run per planned run
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<Factor> grid;
  std::vector<std::string> sources;  // non-empty: sources mode
  int replicates = 3;
  std::string vary = "none";
  bool deterministic = false;
  int workers = 0;  // 0: auto
  int threads_per_run = 1;
  int retries = 2;
  std::string text;  // the file as read (recorded with the study)
  // The base config as it resolved when the study was planned: YAML with
  // every key (the trainer's to_yaml). Every training of the study trains
  // exactly this plus its --set lines, whatever the file on disk says later.
  // Empty in a spec read from a file (the CLI resolves it through the
  // trainer's config) and in studies recorded before plans were recorded.
  std::string resolved_base;
};

// One planned training: its name is unique within the study and stable
// across resumes ("cell/r3").
struct PlannedRun {
  std::string name;
  std::string cell;  // "optimizer.name=adam,seeds.master=0" or a source name
  int replicate = 0;
  std::string vary;                                      // what this cell varies
  std::vector<std::pair<std::string, std::string>> set;  // in order: later wins
  // Each grid factor's level in this cell (its key, its value or level
  // name), in the grid's order; empty in a sources study.
  std::vector<std::pair<std::string, std::string>> levels;
};

// Reads and checks a study file; `quick` applies its quick: section. Throws
// core::Error(kUsage) naming the file and the key for an unknown key, an
// empty grid or factor, replicates < 2, an unknown source, a base config
// that does not exist.
StudySpec load_study(const std::filesystem::path& file, bool quick = false);
// The same from `text` already read (`file` names it in errors and is
// where a relative base config is found); the same errors, and Error
// (kUsage) with the line for YAML that does not parse. Pure but for
// checking that the base config exists.
StudySpec parse_study(const std::string& text, const std::filesystem::path& file,
                      bool quick = false);

// The text a study records as its plan: the study file as written, then
// the resolved base config after a marker line. parse_recorded() reads it
// back without touching any file (the study's files may have moved, or
// live on another host); a text without the marker (a study recorded by an
// earlier trainscope) gives an empty resolved_base.
std::string recorded_text(const StudySpec& spec);
// Reads recorded_text() back; errors as parse_study, except that no file
// is checked.
StudySpec parse_recorded(const std::string& text, const std::filesystem::path& file, bool quick);

// The runs of a study, computed on demand: run i is the i-th of the plan
// (cell by cell, the replicates of a cell together, the last grid factor
// fastest), so that the size of a plan is known before any run exists and
// a plan costs memory only for the runs asked for. Keeps a reference to
// `spec`, which must outlive it.
class Plan {
 public:
  // Sizes the plan (no run is made yet); never throws.
  explicit Plan(const StudySpec& spec);
  explicit Plan(StudySpec&&) = delete;  // it would outlive the spec
  // Runs in the plan; saturates at UINT64_MAX for a grid beyond counting.
  uint64_t size() const { return size_; }
  // Run i < size().
  PlannedRun at(uint64_t i) const;
  // The index of the run named `name`, or nullopt.
  std::optional<uint64_t> find(const std::string& name) const;

 private:
  const StudySpec& spec_;
  uint64_t per_cell_ = 0;  // grid: replicates + exact repeats of a cell
  uint64_t size_ = 0;
};

// Every run of the study, cell by cell. Throws Error(kUsage) for a plan of
// more than `max_runs` runs (its size and how to shrink it): a list of
// them all would not fit in memory.
std::vector<PlannedRun> plan(const StudySpec& spec, uint64_t max_runs = 1000000);

// "key=value" lines for `trainscope train --set`.
std::vector<std::string> set_lines(const PlannedRun& run);

}  // namespace trainscope::study
