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
// or, instead of a grid, the randomness sources varied one at a time:
//
//   sources: [init, data_order, augment, dropout, implementation, all,
//             bitflip, deterministic]
//
// Torch-free: what a key means is the trainer's business; the study only
// writes `--set key=value` lines (the CLI checks them against the trainer's
// config before any run starts).
#pragma once

#include <filesystem>
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
//   a config key    set to 1, 2, 3, ... per replicate
const std::vector<std::string>& source_names();

struct Factor {
  std::string key;
  std::vector<std::string> values;
};

struct StudySpec {
  std::string name;
  std::filesystem::path file;  // the study file
  std::filesystem::path base;  // the base config (absolute)
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
};

// One planned training: its name is unique within the study and stable
// across resumes ("cell/r3").
struct PlannedRun {
  std::string name;
  std::string cell;  // "optimizer.name=adam,seeds.master=0" or a source name
  int replicate = 0;
  std::string vary;                                      // what this cell varies
  std::vector<std::pair<std::string, std::string>> set;  // in order: later wins
};

// Reads and checks a study file; `quick` applies its quick: section. Throws
// core::Error(kUsage) naming the file and the key for an unknown key, an
// empty grid or factor, replicates < 2, an unknown source.
StudySpec load_study(const std::filesystem::path& file, bool quick = false);
StudySpec parse_study(const std::string& text, const std::filesystem::path& file,
                      bool quick = false);

// Every run of the study, cell by cell.
std::vector<PlannedRun> plan(const StudySpec& spec);

// "key=value" lines for `trainscope train --set`.
std::vector<std::string> set_lines(const PlannedRun& run);

}  // namespace trainscope::study
