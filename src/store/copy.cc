#include "trainscope/store/copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/views.h"

namespace trainscope::store {

namespace {

// Points per append: one transaction each, so that a huge series neither
// holds one giant transaction nor pays one per point.
constexpr size_t kBatch = 100'000;
// Record payload bytes per append, for the same reason.
constexpr size_t kRecordBytes = size_t{64} << 20;

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// A run still running in `a` that `b`'s reaper marked killed, as it was:
// the same run, judged (its writer is gone); it is not copied again.
bool reaped_copy(const RunInfo& a, const RunInfo& b) {
  return a.status == RunStatus::kRunning && b.status == RunStatus::kKilled &&
         same_bits(b.end_time, a.heartbeat);
}

std::string compare_info(const RunInfo& a, const RunInfo& judged) {
  RunInfo b = judged;
  if (reaped_copy(a, b)) {
    b.status = a.status;
    b.end_time = a.end_time;
  }
  auto field = [](const char* name) { return std::string("run ") + name + " differs"; };
  if (a.experiment != b.experiment) return field("experiment");
  if (a.name != b.name) return field("name");
  if (a.status != b.status) return field("status");
  if (!same_bits(a.start_time, b.start_time) || !same_bits(a.end_time, b.end_time) ||
      !same_bits(a.heartbeat, b.heartbeat))
    return field("times");
  if (a.parent_uuid != b.parent_uuid) return field("parent");
  if (a.command_line != b.command_line || a.config_text != b.config_text ||
      a.config_hash != b.config_hash)
    return field("command line or config");
  if (a.host != b.host || a.pid != b.pid || a.pid_start != b.pid_start) return field("process");
  return {};
}

std::string compare_metrics(Store& a, Store& b, const std::string& uuid) {
  const auto sa = a.metric_summaries(uuid), sb = b.metric_summaries(uuid);
  if (sa.size() != sb.size()) return fmt::format("metric keys: {} vs {}", sa.size(), sb.size());
  for (size_t k = 0; k < sa.size(); ++k) {
    if (sa[k].key != sb[k].key) return "metric keys differ";
    const auto pa = a.metric(uuid, sa[k].key), pb = b.metric(uuid, sa[k].key);
    if (pa.size() != pb.size())
      return fmt::format("metric {}: {} points vs {}", sa[k].key, pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i)
      if (pa[i].step != pb[i].step || !same_bits(pa[i].value, pb[i].value) ||
          !same_bits(pa[i].wall_time, pb[i].wall_time))
        return fmt::format("metric {}: point {} differs", sa[k].key, i);
  }
  return {};
}

// Every record of every kind, byte for byte, in the order added.
std::string compare_records(Store& a, Store& b, const std::string& uuid) {
  const auto ka = a.record_kinds(uuid), kb = b.record_kinds(uuid);
  if (ka != kb) return "record kinds or counts differ";
  for (const auto& [kind, n] : ka) {
    const auto ra = a.records(uuid, kind), rb = b.records(uuid, kind);
    const bool same =
        std::equal(ra.begin(), ra.end(), rb.begin(), rb.end(), [](const auto& x, const auto& y) {
          return x.key == y.key && x.step == y.step && same_bits(x.wall_time, y.wall_time) &&
                 x.payload == y.payload;
        });
    if (!same) return fmt::format("{} records differ", kind);
  }
  return {};
}

bool same_artifacts(Store& a, Store& b, const std::string& uuid) {
  const auto xa = a.artifacts(uuid), xb = b.artifacts(uuid);
  return std::equal(xa.begin(), xa.end(), xb.begin(), xb.end(), [](const auto& x, const auto& y) {
    return x.name == y.name && x.kind == y.kind && x.sha256 == y.sha256 && x.size == y.size;
  });
}

void copy_records(Store& src, Store& dst, const std::string& uuid, CopyResult& result) {
  dst.set_params(uuid, src.params(uuid));
  for (const auto& [k, v] : src.tags(uuid)) dst.set_tag(uuid, k, v);
  if (auto env = src.environment(uuid); !env.empty()) dst.set_environment(uuid, env);
  for (const auto& m : src.metric_summaries(uuid)) {
    const auto points = src.metric(uuid, m.key);
    for (size_t at = 0; at < points.size(); at += kBatch) {
      const size_t end = std::min(points.size(), at + kBatch);
      dst.append_metrics(uuid, {{m.key,
                                 {points.begin() + static_cast<std::ptrdiff_t>(at),
                                  points.begin() + static_cast<std::ptrdiff_t>(end)}}});
    }
    result.points += static_cast<int64_t>(points.size());
  }
  for (const auto& [kind, n] : src.record_kinds(uuid)) {
    const auto records = src.records(uuid, kind);
    // Appends of at most kRecordBytes payload bytes each (one at least).
    for (size_t at = 0; at < records.size();) {
      size_t end = at, bytes = 0;
      while (end < records.size() &&
             (end == at || bytes + records[end].payload.size() <= kRecordBytes))
        bytes += records[end++].payload.size();
      dst.append_records(uuid, kind,
                         {records.begin() + static_cast<std::ptrdiff_t>(at),
                          records.begin() + static_cast<std::ptrdiff_t>(end)});
      at = end;
    }
  }
  for (const auto& a : src.artifacts(uuid)) {
    dst.add_artifact(uuid, a.path, a.kind, a.name);
    ++result.artifacts;
  }
}

// Copies one run whole or not at all: its artifacts and its records (by
// their capabilities' checks) are checked before any of its rows is written
// (a damaged source file or record is an error, not a silent copy), and a
// copy that fails midway is taken out of `dst` again, so that no reader
// there sees a run with part of its records under its status.
void copy_run(Store& src, Store& dst, const RunInfo& run, CopyResult& result) {
  try {
    for (const auto& a : src.artifacts(run.uuid)) verify_artifact(a);
    check_run_records(src, run);
    dst.import_run(run);
    try {
      copy_records(src, dst, run.uuid, result);
    } catch (...) {
      try {
        dst.delete_run(run.uuid, Store::ChildRuns::kDetach);
      } catch (...) {  // the first error is the one to tell
      }
      throw;
    }
  } catch (const core::Error& e) {
    throw core::Error(fmt::format("{}; run {} ({}) was not copied, {} run(s) before it were",
                                  e.what(), core::escape_for_display(run.name),
                                  core::short_uuid(run.uuid), result.copied + result.recopied),
                      e.kind());
  }
}

// Runs without a parent first: a child's parent must exist when it is made.
std::vector<RunInfo> in_copy_order(Store& src) {
  std::vector<RunInfo> runs;
  for (const auto& light : src.list_runs()) runs.push_back(*src.find_run(light.uuid));
  std::stable_sort(runs.begin(), runs.end(), [](const RunInfo& a, const RunInfo& b) {
    if (a.parent_uuid.empty() != b.parent_uuid.empty()) return a.parent_uuid.empty();
    return a.start_time < b.start_time;
  });
  return runs;
}

}  // namespace

std::string compare_run(Store& a, Store& b, const std::string& uuid) {
  const auto ra = a.find_run(uuid), rb = b.find_run(uuid);
  if (!ra || !rb) return ra ? "missing from the second store" : "missing from the first store";
  if (auto d = compare_info(*ra, *rb); !d.empty()) return d;
  if (a.params(uuid) != b.params(uuid)) return "params differ";
  if (a.tags(uuid) != b.tags(uuid)) return "tags differ";
  if (a.environment(uuid) != b.environment(uuid)) return "environment differs";
  if (auto d = compare_metrics(a, b, uuid); !d.empty()) return d;
  if (auto d = compare_records(a, b, uuid); !d.empty()) return d;
  if (!same_artifacts(a, b, uuid)) return "artifacts differ";
  return {};
}

CopyResult copy_store(Store& src, Store& dst,
                      const std::function<void(const CopyProgress&)>& progress) {
  CopyResult result;
  const auto runs = in_copy_order(src);
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunInfo& run = runs[i];
    bool again = false;
    if (dst.find_run(run.uuid)) {
      if (compare_run(src, dst, run.uuid).empty()) {
        ++result.skipped;
        if (progress) progress({i + 1, runs.size(), run.uuid});
        continue;
      }
      // A copy cut short: start this run again (its children, detached
      // meanwhile, differ in their parent and are copied again after it).
      dst.delete_run(run.uuid, Store::ChildRuns::kDetach);
      again = true;
    }
    copy_run(src, dst, run, result);
    ++(again ? result.recopied : result.copied);
    if (progress) progress({i + 1, runs.size(), run.uuid});
  }
  return result;
}

}  // namespace trainscope::store
