#include <cmath>
#include <type_traits>
#include <variant>

#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::format {

Json number(double v) {
  if (std::isfinite(v)) return v;
  return core::format_double(v);
}

namespace {

// A stored time as UTC text; null for one outside the years 1 to 9999.
Json time_or_null(double t) { return store::is_a_time(t) ? Json(core::format_utc(t)) : Json(); }

// A duration or other measure; null when there is none (NaN).
Json number_or_null(double v) { return std::isnan(v) ? Json() : Json(v); }

}  // namespace

void mark_stale(Json& j, const store::Liveness& shown) {
  if (!shown.stale()) return;
  j["status"] = shown.status;
  j["stale"] = shown.note;
}

Json run(const store::RunInfo& r, bool full, const store::Liveness& shown) {
  Json j = run(r, full);
  mark_stale(j, shown);
  return j;
}

Json run(const store::RunInfo& r, bool full) {
  Json j = {
      {"uuid", r.uuid},
      {"experiment", r.experiment},
      {"name", r.name},
      {"status", to_string(r.status)},
      {"start_time", time_or_null(r.start_time)},
      {"end_time", r.end_time > 0 ? time_or_null(r.end_time) : Json()},
      {"duration_s", number_or_null(store::run_seconds(r, core::unix_now()))},
      {"heartbeat", r.heartbeat > 0 ? time_or_null(r.heartbeat) : Json()},  // NULL reads 0
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
          {"path", a.path.string()}, {"created_time", time_or_null(a.created_time)}};
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

}  // namespace trainscope::format
