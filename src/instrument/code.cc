#include "trainscope/instrument/code.h"

#include <fmt/format.h>

#include <fstream>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::instrument {

namespace {

// Writes `bytes` to a file of its own and adds it to the run.
void add_text_artifact(store::RunRecorder& run, const std::string& bytes, const char* name) {
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) / ("trainscope-code-" + core::new_uuid());
  fs::create_directories(dir, ec);
  const fs::path file = dir / name;
  {
    std::ofstream out(file, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      core::log_warn("cannot write '{}' to record the code that ran; the run holds its hash only",
                     file.string());
      fs::remove_all(dir, ec);
      return;
    }
  }
  run.add_artifact(file, "code", name);
  fs::remove_all(dir, ec);
}

}  // namespace

env::Manifest record_code(store::RunRecorder& run, const fs::path& path) {
  env::GitState g = env::git_state(path);
  if (g.manifest.empty()) return {};
  if (!g.diff.empty() && g.diff.size() > kMaxStoredDiff) {
    run.set_tag("git.diff_stored", fmt::format("no: {} MiB is more than {} MiB",
                                               g.diff.size() >> 20, kMaxStoredDiff >> 20));
  } else if (!g.diff.empty()) {
    add_text_artifact(run, g.diff, kGitDiffArtifact);
  }
  if (!g.untracked.empty()) {
    std::string names;
    for (size_t i = 0; i < g.untracked.size() && i < kMaxUntrackedNames; ++i)
      names += g.untracked[i] + "\n";
    if (g.untracked.size() > kMaxUntrackedNames)
      names += fmt::format("... and {} more\n", g.untracked.size() - kMaxUntrackedNames);
    add_text_artifact(run, names, kUntrackedArtifact);
  }
  return std::move(g.manifest);
}

}  // namespace trainscope::instrument
