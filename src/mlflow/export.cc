// Recorded runs into an MLflow tracking store (`runs export --format mlflow`).
#include <set>

#include "bridge.h"
#include "trainscope/core/error.h"

namespace trainscope::mlflow {

namespace {

// One run whole, as the bridge writes it into MLflow.
format::Json run_request(store::Store& store, const store::RunInfo& listed) {
  const store::RunInfo r = store.find_run(listed.uuid).value_or(listed);
  format::Json j = {{"uuid", r.uuid},
                    {"experiment", r.experiment},
                    {"name", r.name},
                    {"status", store::to_string(r.status)},
                    {"start_time", r.start_time},
                    {"end_time", r.end_time},
                    {"parent", r.parent_uuid},
                    {"command_line", r.command_line},
                    {"config_hash", r.config_hash},
                    {"config", r.config_text},
                    {"host", r.host},
                    {"pid", r.pid},
                    {"params", store.params(r.uuid)},
                    {"tags", store.tags(r.uuid)}};
  format::Json metrics = format::Json::object();
  for (const auto& s : store.metric_summaries(r.uuid)) {
    format::Json points = format::Json::array();
    for (const auto& p : store.metric(r.uuid, s.key))
      points.push_back({p.step, p.wall_time, value_json(p.value)});
    metrics[s.key] = std::move(points);
  }
  j["metrics"] = std::move(metrics);
  format::Json artifacts = format::Json::array();
  for (const auto& a : store.artifacts(r.uuid)) {
    // Bytes that no longer match their checksum are not handed on, as
    // `store copy` refuses them (thirty-fifth hunt, A-D13); a file gone is
    // left out with a word (the bridge says it).
    std::error_code ec;
    if (std::filesystem::exists(a.path, ec)) store::verify_artifact(a);
    artifacts.push_back({{"name", a.name}, {"path", a.path.string()}, {"kind", a.kind}});
  }
  j["artifacts"] = std::move(artifacts);
  return j;
}

// `runs` with every parent among them before its children.
std::vector<store::RunInfo> export_order(const std::vector<store::RunInfo>& runs) {
  std::set<std::string> in, placed;
  for (const auto& r : runs) in.insert(r.uuid);
  std::vector<store::RunInfo> out;
  while (out.size() < runs.size()) {
    const size_t before = out.size();
    for (const auto& r : runs)
      if (!placed.count(r.uuid) && (r.parent_uuid.empty() || !in.count(r.parent_uuid) ||
                                    placed.count(r.parent_uuid) || r.parent_uuid == r.uuid)) {
        out.push_back(r);
        placed.insert(r.uuid);
      }
    if (out.size() == before)  // a cycle a damaged store holds: the rest as they come
      for (const auto& r : runs)
        if (placed.insert(r.uuid).second) out.push_back(r);
  }
  return out;
}

}  // namespace

std::vector<ExportedRun> export_runs(store::Store& store, const std::vector<store::RunInfo>& runs,
                                     const ExportOptions& options, const Bridge& bridge) {
  refuse_own_store(store, options.uri);
  format::Json req = {{"uri", options.uri}, {"runs", format::Json::array()}};
  for (const auto& r : export_order(runs)) req["runs"].push_back(run_request(store, r));
  const format::Json res = run_bridge(bridge, "export", req);
  std::vector<ExportedRun> out;
  for (const auto& r : res.value("runs", format::Json::array()))
    out.push_back({r.value("uuid", ""), r.value("mlflow_run_id", ""), r.value("points", int64_t{0}),
                   r.value("artifacts", int64_t{0}), r.value("already", false)});
  return out;
}

}  // namespace trainscope::mlflow
