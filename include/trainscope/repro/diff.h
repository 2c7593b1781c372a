// Comparing two recorded runs: where their training first differs, which
// tensors differ there and by how much, and how far their metric curves and
// environments are apart. Reads the store; replays steps from a checkpoint
// in a scratch store when asked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/store/store.h"

namespace trainscope::repro {

struct TensorDelta {
  std::string name;
  int64_t elements = 0;
  int64_t differing = 0;  // elements whose bits differ
  double max_abs = 0;
  double max_rel = 0;     // |a-b| / max(|a|,|b|)
  double max_ulp = 0;     // distance in units in the last place
};

struct RunDiff {
  std::string a, b;  // UUIDs
  bool same_model = true;
  std::string model_a, model_b;
  std::vector<env::Difference> config;       // params that differ (config.*, seeds.*)
  std::vector<env::Difference> environment;  // manifest entries that differ

  bool have_fingerprints = false;
  bool same_tensors = true;      // both fingerprint the same tensor names
  int64_t steps_a = 0, steps_b = 0, common_steps = 0;
  int64_t first_diff_step = -1;  // -1: no difference over the common steps
  std::vector<std::string> differing_tensors;  // at first_diff_step, forward order
  bool identical = false;        // bit-identical at every step, same length

  // Replay from the last checkpoint before first_diff_step.
  std::optional<int64_t> replay_from;
  std::string replay_note;
  bool replay_reproduced = false;  // replayed hashes equal the recorded ones
  std::vector<TensorDelta> deltas;

  // Metric curves.
  int64_t loss_steps_compared = 0;
  double max_loss_diff = 0;
  int64_t max_loss_diff_step = -1;
  std::optional<double> final_accuracy_a, final_accuracy_b;
};

// Compares runs a and b. With `replay`, re-executes the steps from the last
// checkpoint before the first divergence under each run's own config to
// measure the numeric differences (needs libtorch; trainscope_train).
RunDiff diff_runs(store::Store& store, const store::RunInfo& a, const store::RunInfo& b, bool replay = true);

// Element-wise comparison of two tensors of the same shape and dtype.
TensorDelta compare_tensors(const std::string& name, const void* a, const void* b,
                            int64_t elements, bool is_double);

// The manifest of a run as recorded, plus its params as config.* / seeds.*.
env::Manifest run_manifest(store::Store& store, const store::RunInfo& run);

}  // namespace trainscope::repro
