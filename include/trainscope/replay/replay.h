// Re-executing what runs recorded, through the trainer: replays measure by
// how much two runs' tensors differ where their fingerprints first part
// (repro's diff); a rerun re-executes a whole run from its records and can
// verify it bit for bit against the original.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/instrument/events.h"
#include "trainscope/repro/diff.h"
#include "trainscope/store/store.h"

namespace trainscope::replay {

// Fills d.replay_* and d.deltas: replays both runs, each under its own
// config, from the last checkpoint of `a` before d.first_diff_step up to
// that step in a scratch store, and compares the tensors element by
// element. Leaves a note in d.replay_note when there is no checkpoint to
// start from or the replay does not reproduce the recorded hashes; throws
// Error(kStore) when a run's config does not match the SHA-256 recorded
// with it (store::verify_config), never replaying a changed config.
void replay_divergence(store::Store& store, const store::RunInfo& a, const store::RunInfo& b,
                       repro::RunDiff& d);

// How rerun() runs the copy: the observers are held shared and called on
// the training thread; before_training is called on the calling thread.
struct RerunOptions {
  bool force = false;        // run even when a dataset file changed
  std::string command_line;  // recorded with the new run
  std::vector<std::shared_ptr<instrument::TrainObserver>> observers;  // e.g. a progress display
  // Called with the machine facts that differ from the original's, before
  // training starts.
  std::function<void(const std::vector<env::Difference>&)> before_training;
};

// What rerun() returns.
struct Rerun {
  instrument::TrainResult result;        // of the new run (tagged rerun_of)
  std::vector<env::Difference> machine;  // machine facts that differ from the original's
};

// Re-executes a recorded run from its stored config, seeds and settings.
// Throws Error(kUsage) for a run without a config, Error(kStore) when its
// config does not match the SHA-256 recorded with it (store::verify_config)
// and Error(kConflict) when a dataset file's SHA-256 changed (unless
// options.force).
Rerun rerun(std::shared_ptr<store::Store> store, const store::RunInfo& original,
            const RerunOptions& options);

}  // namespace trainscope::replay
