// Comparing two recorded runs: where their training first differs, which
// tensors differ there, and how far their metric curves and environments
// are apart. Torch-free: it reads the store only (replay/replay.h re-executes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/store/store.h"

namespace trainscope::repro {

// How one tensor differs between the two runs at the first differing step
// (compare_tensors): a plain value.
struct TensorDelta {
  std::string name;
  int64_t elements = 0;
  int64_t differing = 0;  // elements whose bits differ
  double max_abs = 0;
  double max_rel = 0;  // |a-b| / max(|a|,|b|)
  double max_ulp = 0;  // distance in units in the last place
};

// What diff_runs (and replay_divergence) found: a plain value.
struct RunDiff {
  std::string a, b;  // UUIDs
  bool same_model = true;
  std::string model_a, model_b;
  std::vector<env::Difference> config;       // params that differ (config.*, seeds.*)
  std::vector<env::Difference> environment;  // manifest entries that differ

  bool have_fingerprints = false;
  bool same_tensors = true;  // both fingerprint the same tensor names
  // The hash each run's fingerprints use (fingerprint.h: xxh3-64 on the CPU,
  // words-splitmix64 on a GPU); fingerprints of two hashes are not compared.
  std::string hash_a, hash_b;
  int64_t steps_a = 0, steps_b = 0, common_steps = 0;
  int64_t first_diff_step = -1;                // -1: no difference over the common steps
  std::vector<std::string> differing_tensors;  // at first_diff_step, forward order
  bool identical = false;                      // bit-identical at every step, same length

  // Replay from the last checkpoint before first_diff_step.
  std::optional<int64_t> replay_from;
  std::string replay_note;
  bool replay_reproduced = false;  // replayed hashes equal the recorded ones
  std::vector<TensorDelta> deltas;

  // Metric curves.
  int64_t loss_steps_compared = 0;
  double max_loss_diff = 0;  // of train/loss; meaningless when no step was compared
  int64_t max_loss_diff_step = -1;
  std::optional<double> final_accuracy_a, final_accuracy_b;
};

// Compares the records of runs a and b: config, environment, loss curves,
// and fingerprints up to the first step where they differ. The numeric
// differences at that step come from replay::replay_divergence
// (replay/replay.h, libtorch).
RunDiff diff_runs(store::Store& store, const store::RunInfo& a, const store::RunInfo& b);

// Element-wise comparison of two tensors of the same shape and dtype.
TensorDelta compare_tensors(const std::string& name, const void* a, const void* b, int64_t elements,
                            bool is_double);

// The manifest of a run as recorded, plus its params as config.* / seeds.*.
env::Manifest run_manifest(store::Store& store, const store::RunInfo& run);

// The groups of an environment manifest that describe the machine rather
// than the run (hardware, driver, libraries, system, threads, flags, env,
// build): the part a run can be compared with another machine on.
bool is_machine_group(const std::string& group);

// The machine facts of a run's manifest `recorded` that differ on `here`,
// the hostname aside. Keys `here` lacks are compared only when
// `here_complete` (a manifest without libtorch facts leaves them out).
std::vector<env::Difference> machine_differences(env::Manifest recorded, env::Manifest here,
                                                 bool here_complete = true);

}  // namespace trainscope::repro
