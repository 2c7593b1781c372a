// Whether the code a run ran is the code here: its recorded git state (and
// a dirty tree's stored diff, instrument::record_code) against the work
// tree it came from, as it is now.
#pragma once

#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::repro {

// What check_code found: a plain value.
struct CodeCheck {
  bool recorded = false;           // the run recorded a git state
  bool same = true;                // the tree holds the code that ran
  std::vector<std::string> facts;  // what differs, one fact a line
  std::vector<std::string> files;  // tracked files whose content differs (same commit)
  // Shell commands that bring the tree back to the code that ran (empty
  // when it is there, or when the run's diff was not stored).
  std::string restore;
};

// Compares `run`'s git.* facts and stored git.diff with the tree at its
// recorded git.root now (git is run there).
CodeCheck check_code(store::Store& store, const store::RunInfo& run);

// The files a `git diff` names ("diff --git a/X b/X"), each with its part
// of the patch.
std::vector<std::pair<std::string, std::string>> split_patch(const std::string& patch);

}  // namespace trainscope::repro
