#include <cmath>
#include <type_traits>
#include <variant>

#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::format {

namespace {
Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
}  // namespace

Json number(double v) {
  if (std::isfinite(v)) return v;
  return core::format_double(v);
}

Json run(const store::RunInfo& r, bool full) {
  Json j = {
      {"uuid", r.uuid},
      {"experiment", r.experiment},
      {"name", r.name},
      {"status", to_string(r.status)},
      {"start_time", core::format_utc(r.start_time)},
      {"end_time", r.end_time > 0 ? Json(core::format_utc(r.end_time)) : Json()},
      {"duration_s", (r.end_time > 0 ? r.end_time : r.heartbeat) - r.start_time},
      {"heartbeat", core::format_utc(r.heartbeat)},
      {"parent", r.parent_uuid.empty() ? Json() : Json(r.parent_uuid)},
      {"host", r.host},
      {"pid", r.pid},
      {"config_hash", r.config_hash},
  };
  if (full) {
    j["command_line"] = r.command_line;
    j["config"] = r.config_text;
  }
  return j;
}

Json metric_summary(const store::MetricSummary& m) {
  return {{"key", m.key},
          {"count", m.count},
          {"last_step", m.last_step},
          {"last", number(m.last_value)},
          {"min", number(m.min)},
          {"max", number(m.max)}};
}

Json artifact(const store::ArtifactInfo& a) {
  return {{"name", a.name},          {"kind", a.kind},
          {"sha256", a.sha256},      {"size", a.size},
          {"path", a.path.string()}, {"created_time", core::format_utc(a.created_time)}};
}

Json view(const store::View& v, const store::ViewTable& t) {
  Json rows = Json::array();
  for (const auto& row : t.rows) {
    Json cells = Json::array();
    for (const auto& c : row)
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>)
              cells.push_back(nullptr);
            else if constexpr (std::is_same_v<T, double>)
              cells.push_back(number(x));
            else
              cells.push_back(x);
          },
          c);
    rows.push_back(std::move(cells));
  }
  Json chart = nullptr;
  if (v.chart)
    chart = {{"series", v.chart->series},
             {"x", v.chart->x},
             {"y", v.chart->y},
             {"log_y", v.chart->log_y}};
  return {{"name", v.name},       {"title", v.title}, {"kind", v.kind},
          {"columns", t.columns}, {"rows", rows},     {"chart", chart}};
}

Json metric_points(const std::vector<store::MetricPoint>& pts) {
  Json arr = Json::array();
  for (const auto& p : pts)
    arr.push_back({{"step", p.step}, {"wall_time", p.wall_time}, {"value", number(p.value)}});
  return arr;
}

Json run_export(store::Store& store, const store::RunInfo& r, bool with_points) {
  Json j = run(r, true);
  j["params"] = store.params(r.uuid);
  j["tags"] = store.tags(r.uuid);
  Json ms = Json::array();
  auto summaries = store.metric_summaries(r.uuid);
  for (const auto& m : summaries) ms.push_back(metric_summary(m));
  j["metric_summaries"] = ms;
  if (with_points) {
    Json pts = Json::object();
    for (const auto& m : summaries) pts[m.key] = metric_points(store.metric(r.uuid, m.key));
    j["metrics"] = pts;
  }
  j["records"] = store.record_kinds(r.uuid);
  Json arts = Json::array();
  for (const auto& a : store.artifacts(r.uuid)) arts.push_back(artifact(a));
  j["artifacts"] = arts;
  return j;
}

Json differences(const std::vector<env::Difference>& diffs) {
  Json arr = Json::array();
  for (const auto& d : diffs)
    arr.push_back({{"group", d.group}, {"key", d.key}, {"a", d.a}, {"b", d.b}});
  return arr;
}

Json recipe(const env::Recipe& r, const std::vector<env::PinCheck>& checks) {
  Json packages = Json::array();
  for (size_t i = 0; i < r.packages.size(); ++i) {
    const auto& p = r.packages[i];
    Json j = {{"name", p.name},
              {"arch", p.arch},
              {"version", p.version},
              {"pin", p.pin},
              {"objects", p.objects},
              {"pool_url", p.pool_url},
              {"repacked_file", p.repacked_file}};
    if (checks.size() == r.packages.size())
      j["check"] = {{"ok", checks[i].ok},
                    {"message", checks[i].message},
                    {"source", checks[i].source},
                    {"note", checks[i].note}};
    packages.push_back(std::move(j));
  }
  return {
      {"image", r.image},
      {"os", r.os},
      {"debian_version", r.debian_version},
      {"arch", r.arch},
      {"libtorch", r.libtorch},
      {"blas", r.blas},
      {"torch",
       {{"requirement", r.torch_requirement}, {"index", r.torch_index}, {"note", r.torch_note}}},
      {"packages", packages},
      {"pip", r.pip},
      {"python_from_debian", r.python_from_debian},
      {"unowned", r.unowned},
      {"snapshots", r.snapshots},
      {"trainscope_commit", r.trainscope_commit}};
}

Json run_diff(const repro::RunDiff& d) {
  Json deltas = Json::array();
  for (const auto& x : d.deltas)
    deltas.push_back({{"tensor", x.name},
                      {"elements", x.elements},
                      {"differing", x.differing},
                      {"max_abs", x.max_abs},
                      {"max_rel", x.max_rel},
                      {"max_ulp", x.max_ulp}});
  return {{"a", d.a},
          {"b", d.b},
          {"same_model", d.same_model},
          {"have_fingerprints", d.have_fingerprints},
          {"bit_identical", d.identical},
          {"common_steps", d.common_steps},
          {"first_diff_step", d.first_diff_step},
          {"differing_tensors", d.differing_tensors},
          {"replay_from", d.replay_from ? Json(*d.replay_from) : Json()},
          {"replay_reproduced", d.replay_reproduced},
          {"deltas", deltas},
          {"max_loss_diff", number(d.max_loss_diff)},
          {"final_accuracy_a", optional_number(d.final_accuracy_a)},
          {"final_accuracy_b", optional_number(d.final_accuracy_b)},
          {"config", differences(d.config)},
          {"environment", differences(d.environment)}};
}

Json checklist(const std::vector<repro::ChecklistItem>& items) {
  Json arr = Json::array();
  for (const auto& i : items)
    arr.push_back({{"item", i.question}, {"answer", i.answer}, {"answered", i.answered}});
  return arr;
}

Json resource_stats(const std::vector<monitor::SeriesStats>& stats) {
  Json arr = Json::array();
  for (const auto& s : stats)
    arr.push_back({{"key", s.key},
                   {"n", s.n},
                   {"mean", s.mean},
                   {"p50", s.p50},
                   {"p95", s.p95},
                   {"max", s.max}});
  return arr;
}

Json throughput(const std::vector<monitor::ThroughputColumn>& columns) {
  Json js = Json::array();
  const auto& rows = monitor::throughput_rows();
  for (const auto& c : columns) {
    Json j = {{"run", c.run_uuid}, {"batch size", c.batch_size}};
    for (size_t i = 0; i < rows.size(); ++i) j[rows[i].label] = throughput_cell(c, i);
    js.push_back(j);
  }
  return js;
}

}  // namespace trainscope::format
