// Which of a study's runs count: the one answer every reader of a study's
// runs uses (study status, study report, stats, the dashboard).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/study/study.h"

namespace trainscope::study {

using store::RunInfo;
using store::RunStatus;

const RunInfo* PlannedAttempts::counted() const {
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it)
    if (it->status == RunStatus::kFinished) return &*it;
  return attempts.empty() ? nullptr : &attempts.back();
}

std::vector<RunInfo> StudyRuns::counted() const {
  std::vector<RunInfo> out;
  for (const auto& p : planned)
    if (const RunInfo* r = p.counted()) out.push_back(*r);
  return out;
}

std::vector<RunInfo> StudyRuns::results() const {
  std::vector<RunInfo> out;
  for (const auto& r : counted())
    if (r.status == RunStatus::kFinished) out.push_back(r);
  return out;
}

namespace {

bool is_study(store::Store& store, const std::string& uuid) {
  const auto tags = store.tags(uuid);
  const auto kind = tags.find("kind");
  return kind != tags.end() && kind->second == "study";
}

// The UUIDs of `runs` tagged kSupersededTag.
std::set<std::string> superseded(store::Store& store, const std::vector<RunInfo>& runs) {
  std::vector<std::string> uuids;
  for (const auto& r : runs) uuids.push_back(r.uuid);
  std::set<std::string> out;
  for (const auto& [uuid, fields] : store.run_fields(uuids, false, true, false))
    if (fields.tags.count(kSupersededTag)) out.insert(uuid);
  return out;
}

// The UUIDs of the children study `uuid` counts; nullopt when it is no
// study, or its recorded plan cannot be read (a reader of that study says
// why; a table of runs shows its children as they are).
std::optional<std::set<std::string>> counted_of(store::Store& store, const std::string& uuid) {
  const auto study = store.find_run(uuid);
  if (!study || !is_study(store, uuid)) return std::nullopt;
  try {
    std::set<std::string> out;
    for (const auto& c : study_runs(store, *study).counted()) out.insert(c.uuid);
    return out;
  } catch (const core::Error&) {
    return std::nullopt;
  }
}

}  // namespace

StudyRuns study_runs(store::Store& store, const RunInfo& study) {
  StudyRuns out{study, recorded_spec(store, study), {}, {}};
  auto runs = store.list_runs({.parent_uuid = study.uuid});  // newest first
  const std::set<std::string> aside = superseded(store, runs);
  std::map<std::string, std::vector<RunInfo>> by_name;  // oldest first
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    if (!aside.count(it->uuid)) by_name[it->name].push_back(*it);
  const Plan plan(out.spec);
  for (uint64_t i = 0; i < plan.size(); ++i) {
    PlannedAttempts p{plan.at(i), {}};
    if (auto node = by_name.extract(p.planned.name)) p.attempts = std::move(node.mapped());
    out.planned.push_back(std::move(p));
  }
  // Every other child is set aside: attempts tagged so, older attempts no
  // tag names (a run a job's background process recorded after the job
  // ended), and runs the plan does not name (a plan changed by --replan).
  std::set<std::string> counted;
  for (const auto& p : out.planned)
    if (const RunInfo* r = p.counted()) counted.insert(r->uuid);
  for (const auto& r : runs)
    if (!counted.count(r.uuid)) out.set_aside.push_back(r);
  return out;
}

std::vector<RunInfo> counted_runs(store::Store& store, std::vector<RunInfo> runs) {
  const std::set<std::string> aside = superseded(store, runs);
  // Each parent, read once: the children it counts when it is a study.
  std::map<std::string, std::optional<std::set<std::string>>> by_parent;
  for (const auto& r : runs)
    if (!r.parent_uuid.empty() && !by_parent.count(r.parent_uuid))
      by_parent[r.parent_uuid] = counted_of(store, r.parent_uuid);
  std::erase_if(runs, [&](const RunInfo& r) {
    if (aside.count(r.uuid)) return true;
    const auto it = by_parent.find(r.parent_uuid);
    return it != by_parent.end() && it->second && !it->second->count(r.uuid);
  });
  return runs;
}

int64_t counted_children(store::Store& store, const std::string& parent_uuid) {
  if (const auto counted = counted_of(store, parent_uuid)) return std::ssize(*counted);
  return std::ssize(counted_runs(store, store.list_runs({.parent_uuid = parent_uuid})));
}

std::optional<std::vector<RunInfo>> repeats_of(store::Store& store, const RunInfo& run) {
  if (run.config_hash.empty() || is_study(store, run.uuid)) return std::nullopt;
  auto runs = store.list_runs({.status = RunStatus::kFinished});
  std::erase_if(runs, [](const RunInfo& r) { return r.config_hash.empty(); });
  // A training records its config as params (config::flatten): a repeat
  // trains the same ones but its seeds (thirty-first hunt, A-D2: the
  // config hash, seeds and all, never counted a repeat with other seeds).
  std::vector<std::string> uuids = {run.uuid};
  for (const auto& r : runs) uuids.push_back(r.uuid);
  auto fields = store.run_fields(uuids, /*params=*/true, false, false);
  auto unseeded = [&](const std::string& uuid) {
    auto p = fields[uuid].params;
    std::erase_if(p, [](const auto& kv) { return kv.first.starts_with("seeds."); });
    return p;
  };
  const auto mine = unseeded(run.uuid);
  std::erase_if(runs, [&](const RunInfo& r) {
    if (r.config_hash == run.config_hash) return false;
    const auto theirs = unseeded(r.uuid);
    return mine.empty() || theirs != mine;  // no params recorded: the hash alone says
  });
  return counted_runs(store, std::move(runs));
}

}  // namespace trainscope::study
