// The code that ran: a run records the git state of the tree it came from,
// and when that tree is dirty, what `git apply` needs to get it back.
#pragma once

#include <cstddef>
#include <filesystem>

#include "trainscope/env/manifest.h"
#include "trainscope/store/run_recorder.h"

namespace trainscope::instrument {

// The artifact names of a dirty tree's code.
inline constexpr const char* kGitDiffArtifact = "git.diff";
inline constexpr const char* kUntrackedArtifact = "git.untracked.txt";
// A diff larger than this is not stored (the tag git.diff_stored says why);
// its SHA-256 still is.
inline constexpr size_t kMaxStoredDiff = 32u << 20;
// The most untracked files named (a tree may hold a dataset nobody ignored).
inline constexpr size_t kMaxUntrackedNames = 10000;

// Captures the git state of the tree holding `path` (env::git_state: a
// study's warm worker captured it once)
// and returns its manifest for the run's environment. A dirty tree's diff
// against HEAD is added to `run` as the artifact git.diff (byte for byte
// what `git diff --binary HEAD` wrote: its SHA-256 is git.diff_sha256), and
// the names of untracked files, which no diff holds (clean tree or not), as
// git.untracked.txt.
env::Manifest record_code(store::RunRecorder& run, const std::filesystem::path& path);

}  // namespace trainscope::instrument
