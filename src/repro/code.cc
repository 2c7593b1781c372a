#include "trainscope/repro/code.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"

namespace trainscope::repro {

std::vector<std::pair<std::string, std::string>> split_patch(const std::string& patch) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = patch.rfind("diff --git ", 0) == 0 ? 0 : patch.find("\ndiff --git ");
  if (at != std::string::npos && at > 0) ++at;
  while (at != std::string::npos && at < patch.size()) {
    size_t next = patch.find("\ndiff --git ", at);
    next = next == std::string::npos ? patch.size() : next + 1;
    const std::string part = patch.substr(at, next - at);
    const std::string header = part.substr(0, part.find('\n'));
    const size_t b = header.rfind(" b/");
    out.emplace_back(b == std::string::npos ? header : header.substr(b + 3), part);
    at = next;
  }
  return out;
}

namespace {

std::string stored_diff(store::Store& store, const store::RunInfo& run, std::string* path) {
  for (const auto& a : store.artifacts(run.uuid)) {
    if (a.name != "git.diff" || a.kind != "code") continue;
    *path = a.path;
    try {  // damaged, replaced, a FIFO or a device: read as none, never trusted
      store::verify_artifact(a);
      return core::read_regular_file(a.path, "artifact").value_or("");
    } catch (const core::Error&) {
      return {};
    }
  }
  return {};
}

// Tracked files whose change against HEAD differs between two patches on
// the same commit: the files whose content differs.
std::vector<std::string> differing_files(const std::string& then, const std::string& now) {
  std::map<std::string, std::string> a, b;
  for (auto& [f, p] : split_patch(then)) a[f] = std::move(p);
  for (auto& [f, p] : split_patch(now)) b[f] = std::move(p);
  std::vector<std::string> out;
  for (const auto& [f, p] : a)
    if (!b.count(f) || b[f] != p) out.push_back(f);
  for (const auto& [f, p] : b)
    if (!a.count(f)) out.push_back(f);
  std::sort(out.begin(), out.end());
  return out;
}

std::string state(const std::string& commit, bool dirty, size_t files) {
  return fmt::format("commit {}{}", commit.substr(0, 12),
                     dirty ? fmt::format(" with uncommitted changes to {} file(s)", files)
                           : std::string(", clean"));
}

}  // namespace

CodeCheck check_code(store::Store& store, const store::RunInfo& run) {
  CodeCheck c;
  const env::Manifest rec = store.environment(run.uuid);
  auto get = [&](const char* k) { return rec.count(k) ? rec.at(k) : std::string(); };
  const std::string commit = get("git.commit"), root = get("git.root");
  if (commit.empty() || root.empty()) return c;
  c.recorded = true;
  // A store's bytes are untrusted: a commit that is not one (hex, as git
  // writes it) never reaches the command printed to restore the code.
  if (commit.size() < 7 || commit.size() > 64 ||
      commit.find_first_not_of("0123456789abcdef") != std::string::npos) {
    c.same = false;
    c.facts.push_back(fmt::format(
        "the run's recorded git.commit '{}' is not a git commit id: the store was changed; "
        "no command to restore its code is given",
        core::escape_cut(commit, 80)));
    return c;
  }
  std::string diff_path;
  const std::string then_diff = stored_diff(store, run, &diff_path);
  const bool then_dirty = get("git.dirty") == "true";
  const env::GitState now = env::capture_git_state(root);
  if (now.manifest.empty()) {
    c.same = false;
    c.facts.push_back(
        fmt::format("the run's code came from the git tree '{}', which is not there now", root));
    return c;
  }
  const std::string now_commit = now.manifest.at("git.commit");
  const bool same_commit = now_commit == commit;
  const bool same_diff = now.manifest.at("git.diff_sha256") == get("git.diff_sha256");
  if (same_commit && same_diff) return c;
  c.same = false;
  c.facts.push_back(fmt::format(
      "the run ran {}; '{}' is now at {}", state(commit, then_dirty, split_patch(then_diff).size()),
      root, state(now_commit, !now.diff.empty(), split_patch(now.diff).size())));
  const bool diff_known = !then_dirty || !then_diff.empty();
  if (same_commit && diff_known) c.files = differing_files(then_diff, now.diff);
  if (!c.files.empty()) {
    std::string names;
    for (const auto& f : c.files) names += (names.empty() ? "" : ", ") + f;
    c.facts.push_back("tracked files that differ from the run's: " + names);
  }
  if (!diff_known)
    c.facts.push_back(
        "the run's uncommitted changes were not stored (recorded before trainscope kept them, "
        "or too large): only their SHA-256 is known");
  if (!diff_known) return c;
  const std::string r = core::shell_quote(root);
  c.restore = fmt::format("git -C {} stash --include-untracked && git -C {} checkout {}", r, r,
                          core::shell_quote(commit));
  if (then_dirty)
    c.restore += fmt::format(" && git -C {} apply --index {}", r, core::shell_quote(diff_path));
  return c;
}

}  // namespace trainscope::repro
