// The runs table, the run page and its live poll, metric series for charts,
// resources, artifacts and tags.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <vector>

#include "api_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/ranks.h"
#include "trainscope/format/axes.h"
#include "trainscope/monitor/json.h"
#include "trainscope/monitor/report.h"
#include "trainscope/probes/records.h"
#include "trainscope/serve/downsample.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/query.h"
#include "trainscope/store/views.h"
#include "trainscope/study/study.h"

namespace trainscope::serve::detail {

using core::ErrorKind;
using core::fail;

namespace {

// What the runs table shows when the page asks for no columns: the run,
// and the two metrics every training records.
std::vector<std::string> dashboard_columns() {
  auto cols = store::default_run_columns();
  cols.push_back("metrics.train/loss");
  cols.push_back("metrics.test/accuracy");
  return cols;
}

// "name or UUID contains TEXT" in the filter language.
std::optional<store::MetricSummary> summary_of(const std::vector<store::MetricSummary>& all,
                                               const std::string& key) {
  for (auto& m : all)
    if (m.key == key) return m;
  return std::nullopt;
}

// A stored time as the API gives one: null where none was recorded (NULL
// reads 0: the epoch is no event's or heartbeat's time) or it is no time,
// as format's run JSON does (twenty-fourth hunt, B-D3 and B-D4).
Json stored_time(double t) {
  return t > 0 && store::is_a_time(t) ? Json(core::format_utc(t)) : Json();
}

Json events_json(const std::vector<probes::RunEvent>& events) {
  Json out = Json::array();
  for (const auto& e : events)
    out.push_back({{"step", e.step},
                   {"wall_time", stored_time(e.wall_time)},
                   {"kind", e.kind},
                   {"name", e.name},
                   {"source", e.source},
                   {"message", e.message}});
  return out;
}

// A run recorded "running" whose writer is gone is shown as stale
// (store::liveness); the API only reads.
using format::mark_stale;

bool has_prefix(const std::vector<store::MetricSummary>& ms, std::string_view prefix) {
  return std::any_of(ms.begin(), ms.end(),
                     [&](const auto& m) { return m.key.starts_with(prefix); });
}

// A chart's points on every axis it can switch to (format/axes.h): the
// recorded step, the global step it sits at, the fractional epoch and the
// seconds since the run started.
struct ChartAxes {
  Json steps = Json::array(), at_step = Json::array(), epochs = Json::array(),
       times = Json::array(), values = Json::array();

  void add(const format::RunAxes& axes, const format::SeriesAxis& axis, const store::MetricPoint& p,
           const store::RunInfo& run) {
    const double since = store::since_start(run, p.wall_time);  // NaN: no time (null)
    const auto px = format::point_x(axes, axis, p.step);
    steps.push_back(p.step);
    if (px.step == std::floor(px.step))
      at_step.push_back(static_cast<int64_t>(px.step));
    else
      at_step.push_back(px.step);
    epochs.push_back(std::round(px.epoch * 1e4) / 1e4);
    times.push_back(std::isfinite(since) ? Json(std::round(since * 1e3) / 1e3) : Json());
    values.push_back(std::isfinite(p.value) ? Json(p.value) : Json());
  }
};

// Rows of runs as the table shows them. Whatever the columns, a row names
// its run for links and selection.
Json table_rows(store::Store& s, const store::RunQueryResult& result) {
  Json j = format::run_rows(result);
  const double now = s.now();
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const auto& info = result.rows[i].info;
    j["runs"][i]["uuid"] = info.uuid;
    j["runs"][i]["name"] = info.name;
    j["runs"][i]["status"] = store::to_string(info.status);
    mark_stale(j["runs"][i], s.liveness(info, now));
  }
  return j;
}

// The UUIDs of a group's children that readers count (study::counted_runs):
// a study's set-aside attempts are not its children in the table.
std::set<std::string> counted_children_of(store::Store& s, const store::RunQueryResult& result,
                                          const store::RunGroup& g) {
  std::vector<store::RunInfo> kids;
  for (size_t c : g.children) kids.push_back(result.rows[c].info);
  std::set<std::string> out;
  for (const auto& r : study::counted_runs(s, std::move(kids))) out.insert(r.uuid);
  return out;
}

// The runs table with a study's runs nested under it (store::RunQuery::nest):
// each group's top row gets "matched", "children" (the rows of its matching
// runs that readers count) and, when any match, "children_total" (its
// planned runs that have a run) and "children_set_aside" (matching runs
// left out: attempts the study set aside).
Json nested_runs(store::Store& s, store::RunQuery q) {
  q.nest = true;
  const auto result = store::query_runs(s, q);
  Json flat = table_rows(s, result);
  Json runs = Json::array();
  for (const auto& g : result.groups) {
    Json row = std::move(flat["runs"][g.top]);
    row["matched"] = g.top_matched;
    row["children"] = Json::array();
    const auto counted = counted_children_of(s, result, g);
    for (size_t c : g.children)
      if (counted.count(result.rows[c].info.uuid))
        row["children"].push_back(std::move(flat["runs"][c]));
    if (!g.children.empty()) {
      row["children_total"] = study::counted_children(s, result.rows[g.top].info.uuid);
      row["children_set_aside"] = g.children.size() - counted.size();
    }
    runs.push_back(std::move(row));
  }
  flat["runs"] = std::move(runs);
  return flat;
}

}  // namespace

Json runs_page(store::Store& s, const Request& r) {
  store::RunQuery q;
  q.base.experiment = param(r, "experiment");
  q.status = param(r, "status");  // as the rows show it: "stale" too (store::RunQuery)
  q.filter = param(r, "filter");
  q.search = param(r, "search");
  q.sort = param(r, "sort");
  q.sort_named = "parameter 'sort'";
  q.columns = core::split_given_list(param(r, "columns"), "columns");
  q.columns_named = "parameter 'columns'";
  if (q.columns.empty()) q.columns = dashboard_columns();
  q.offset = int_param(r, "offset", 0, 0, INT64_MAX);
  q.limit = int_param(r, "limit", 50, 1, 1000);
  const std::string nest = param(r, "nest");
  if (!nest.empty() && nest != "parent")
    fail(ErrorKind::kUsage, "parameter 'nest' is '{}': give parent, or leave it out",
         core::escape_for_display(nest));
  Json j = nest.empty() ? table_rows(s, store::query_runs(s, q)) : nested_runs(s, q);
  j["offset"] = q.offset;
  j["limit"] = q.limit;
  j["experiments"] = s.list_experiments();
  return j;
}

Json run_page(store::Store& s, const store::RunInfo& run) {
  Json j;
  j["run"] = format::run(run, true);
  mark_stale(j["run"], s.liveness(run, s.now()));
  j["params"] = s.params(run.uuid);
  const auto tags = s.tags(run.uuid);
  j["tags"] = tags;
  const auto summaries = s.metric_summaries(run.uuid);
  const auto axes = format::run_axes(s, run.uuid, summaries);
  j["metrics"] = Json::array();
  for (const auto& m : summaries) {
    Json mj = format::metric_summary(m);
    const auto& a = axes.of(m.key);
    mj["x"] = format::to_string(a.x);
    mj["group"] = format::to_string(a.group);
    mj["chart"] = a.chart;
    j["metrics"].push_back(std::move(mj));
  }
  j["epoch_ends"] = Json::array();
  for (const auto& [epoch, step] : axes.epochs.step_of) j["epoch_ends"].push_back({epoch, step});
  j["artifacts"] = Json::array();
  for (const auto& a : s.artifacts(run.uuid)) {
    Json aj = format::artifact(a);
    aj.erase("path");  // where the server keeps it is not the browser's business
    aj["url"] = artifact_url(run.uuid, a.name);
    j["artifacts"].push_back(std::move(aj));
  }
  j["events"] = events_json(probes::read_events(s, run.uuid));
  j["records"] = s.record_kinds(run.uuid);
  j["views"] = Json::array();  // the capabilities' views it holds (store/views.h)
  for (const auto& v : store::views_of(s, run.uuid))
    j["views"].push_back({{"name", v.name}, {"title", v.title}});
  j["has_profile"] = has_prefix(summaries, "profile/coverage");
  j["has_probes"] = has_prefix(summaries, "probe/");
  auto kind = tags.find("kind");
  j["is_study"] = kind != tags.end() && kind->second == "study";
  j["children"] = study::counted_children(s, run.uuid);
  return j;
}

Json view(store::Store& s, const store::RunInfo& run, const Request& r, const std::string& name) {
  const store::View v = store::find_view_of(s, run, name);
  // A chart needs no more rows than it has pixels: every k-th row, so the
  // sample spans every step and series (`runs view` gives them all), read
  // as such from the store (store::read_view_sample): memory holds the
  // sample, not the run's records.
  const auto max_rows = static_cast<size_t>(int_param(r, "max_rows", 5000, 1, 100000));
  int64_t total = 0;
  const store::ViewTable t = store::read_view_sample(s, run, v, max_rows, total);
  Json j = format::view(v, t);
  j["total_rows"] = total;
  j["sampled"] = total > static_cast<int64_t>(max_rows);
  return j;
}

Json live(store::Store& s, const store::RunInfo& run) {
  Json metrics = Json::array();
  const auto summaries = s.metric_summaries(run.uuid);
  const auto axes = format::run_axes(s, run.uuid, summaries);
  for (const auto& m : summaries) {
    const auto& a = axes.of(m.key);
    metrics.push_back({{"key", m.key},
                       {"count", m.count},
                       {"last_step", m.last_step},
                       {"last", format::number(m.last_value)},
                       {"x", format::to_string(a.x)},
                       {"group", format::to_string(a.group)},
                       {"chart", a.chart}});
  }
  Json j = {{"status", store::to_string(run.status)},
            {"heartbeat", stored_time(run.heartbeat)},
            {"duration_s", store::run_seconds(run, core::unix_now())},
            {"metrics", metrics}};
  mark_stale(j, s.liveness(run, s.now()));
  return j;
}

namespace {

// What a first pass over a series finds before it is drawn: its points
// from `after` on, how many of them are finite, and whether their steps are
// in order (LTTB needs x in order: a series is appended in step order but
// need not be).
struct SeriesShape {
  int64_t points = 0, finite = 0;
  bool in_order = true;
};

SeriesShape shape_of(store::Store& s, const std::string& uuid, const std::string& key,
                     int64_t after) {
  SeriesShape out;
  int64_t last = INT64_MIN;
  s.scan_metric(uuid, key, after, [&](const std::vector<store::MetricPoint>& chunk) {
    for (const auto& p : chunk) {
      out.in_order = out.in_order && p.step >= last;
      last = p.step;
      if (std::isfinite(p.value)) ++out.finite;
    }
    out.points += std::ssize(chunk);
    return true;
  });
  return out;
}

// A chart's points and what the answer says of them.
struct ChartPoints {
  ChartAxes drawn;
  int64_t read = 0, nonfinite = 0;
  bool down = false;
};

// A series in step order with more finite points than `target`: what LTTB
// keeps of its finite points, read a chunk at a time in a second pass
// (LttbStream), up to the points the first counted (those that came later
// are the next poll's). Memory holds two of LTTB's buckets and the answer,
// not the series; the points are lttb()'s over the series read whole.
ChartPoints streamed_chart(store::Store& s, const store::RunInfo& run, const std::string& key,
                           int64_t after, const SeriesShape& shape, size_t target,
                           const format::RunAxes& axes) {
  LttbStream<store::MetricPoint> sample(static_cast<size_t>(shape.finite), target);
  int64_t left = shape.points;
  s.scan_metric(run.uuid, key, after, [&](const std::vector<store::MetricPoint>& chunk) {
    for (const auto& p : chunk) {
      if (left-- <= 0) return false;
      if (std::isfinite(p.value)) sample.add(static_cast<double>(p.step), p.value, p);
    }
    return true;
  });
  ChartPoints out{.read = shape.points, .nonfinite = shape.points - shape.finite, .down = true};
  for (const auto& p : sample.kept()) out.drawn.add(axes, axes.of(key), p, run);
  return out;
}

// A series read whole: one with no more finite points than `target` (all
// of them are sent, non-finite values as gaps), or one whose steps are not
// in order (sorted first).
ChartPoints read_chart(store::Store& s, const store::RunInfo& run, const std::string& key,
                       int64_t after, size_t target, const format::RunAxes& axes) {
  auto points = s.metric_from(run.uuid, key, after);
  auto by_step = [](const auto& a, const auto& b) { return a.step < b.step; };
  if (!std::is_sorted(points.begin(), points.end(), by_step))
    std::stable_sort(points.begin(), points.end(), by_step);
  const auto& axis = axes.of(key);
  std::vector<double> x, y;
  ChartPoints out{.read = std::ssize(points)};
  for (const auto& p : points) {
    if (!std::isfinite(p.value)) {
      ++out.nonfinite;
      continue;
    }
    x.push_back(static_cast<double>(p.step));
    y.push_back(p.value);
  }
  out.down = x.size() > target;
  if (out.down) {
    // LTTB indexes the finite points; map back only when some were not.
    std::vector<size_t> finite;
    if (out.nonfinite > 0)
      for (size_t i = 0; i < points.size(); ++i)
        if (std::isfinite(points[i].value)) finite.push_back(i);
    for (size_t i : lttb(x.data(), y.data(), x.size(), target))
      out.drawn.add(axes, axis, points[out.nonfinite > 0 ? finite[i] : i], run);
  } else {
    // A series mostly NaN (60,000 points, 2 finite) was answered whole past
    // the limit (twenty-eighth hunt, B-D2): its gaps are then left out,
    // counted in `nonfinite`.
    const bool all = points.size() <= target;
    for (const auto& p : points)
      if (all || std::isfinite(p.value)) out.drawn.add(axes, axis, p, run);
  }
  return out;
}

}  // namespace

// A series is read twice a chunk at a time (its shape, then LTTB's sample)
// when it is drawn with fewer points than it has: memory holds the answer,
// not the series (a run of millions of points).
Json metric_chart(store::Store& s, const store::RunInfo& run, const Request& r) {
  const std::string key = required(r, "key");
  const int64_t width = int_param(r, "width", 1000, 1, 100000);
  const int64_t after = int_param(r, "after", 0, 0, INT64_MAX);
  const auto summaries = s.metric_summaries(run.uuid);
  const auto summary = summary_of(summaries, key);
  if (!summary) {
    std::vector<std::string> keys;
    for (const auto& m : summaries) keys.push_back(m.key);
    fail(ErrorKind::kNotFound, "run {} has no metric '{}' ({} keys recorded)",
         core::short_uuid(run.uuid), core::escape_for_display(key), keys.size());
  }
  // At least 3 (the first, one between, the last): LTTB keeps every point
  // of a sample smaller than that, and width=1 served the whole series.
  const size_t target = std::clamp<size_t>(static_cast<size_t>(2 * width), 3, kMaxChartPoints);
  const auto axes = format::run_axes(s, run.uuid, summaries);
  const SeriesShape shape = shape_of(s, run.uuid, key, after);
  ChartPoints out = shape.in_order && target >= 3 && static_cast<size_t>(shape.finite) > target
                        ? streamed_chart(s, run, key, after, shape, target, axes)
                        : read_chart(s, run, key, after, target, axes);
  // What the series holds, whatever `after` says (one past the end included);
  // points appended between the two reads are counted too.
  const int64_t count = std::max(summary->count, std::min(after, summary->count) + out.read);
  return {{"key", key},
          {"count", count},
          {"from", std::min(after, count)},
          {"downsampled", out.down},
          {"nonfinite", out.nonfinite},
          {"x", format::to_string(axes.of(key).x)},
          {"steps", std::move(out.drawn.steps)},
          {"at_step", std::move(out.drawn.at_step)},
          {"epochs", std::move(out.drawn.epochs)},
          {"times", std::move(out.drawn.times)},
          {"values", std::move(out.drawn.values)}};
}

Json resources(store::Store& s, const store::RunInfo& run) {
  Json keys = Json::array();
  for (const auto& m : s.metric_summaries(run.uuid))
    if (monitor::is_resource_key(m.key)) keys.push_back(m.key);
  return {{"stats", monitor::resource_stats_json(monitor::resource_stats(s, run, 0))},
          {"keys", keys}};
}

// A data-parallel run's ranks side by side (dist::rank_summary); NaN (a
// series not recorded) is null.
Json ranks(store::Store& s, const store::RunInfo& run) {
  const auto sum = dist::rank_summary(s, run.uuid);
  auto figures = [](const std::map<std::string, double>& m) {
    Json o = Json::object();
    for (const auto& [k, v] : m) o[k] = std::isfinite(v) ? Json(v) : Json();
    return o;
  };
  Json rows = Json::array();
  for (const auto& r : sum.ranks)
    rows.push_back({{"rank", r.rank},
                    {"host", r.host},
                    {"address", r.address},
                    {"median", figures(r.median)},
                    {"p95", figures(r.p95)}});
  return {{"world_size", sum.world_size},
          {"backend", sum.backend},
          {"rendezvous", sum.rendezvous},
          {"buckets", sum.buckets},
          {"bytes_reduced", sum.bytes_reduced},
          {"slowest", sum.slowest},
          {"compute_spread_ms", sum.compute_spread_ms},
          {"fields", sum.fields},
          {"ranks", rows}};
}

Response artifact_file(store::Store& s, const store::RunInfo& run, const std::string& name) {
  for (const auto& a : s.artifacts(run.uuid)) {
    if (a.name != name) continue;
    store::verify_artifact(a);  // a damaged file is an error, never served
    Response out =
        text({}, name.ends_with(".json") ? "application/json" : "application/octet-stream");
    out.file = a.path;  // streamed from the file (server.cc's send)
    out.file_length = out.file_size = static_cast<uint64_t>(a.size);
    out.file_sha256 = a.sha256;  // checked again as it is sent
    out.headers.emplace_back("Content-Disposition",
                             content_disposition(a.path.filename().string()));
    // One range of it is served (a download resumed): server.cc's serve_range.
    out.headers.emplace_back("Accept-Ranges", "bytes");
    return out;
  }
  fail(ErrorKind::kNotFound, "run {} has no artifact '{}'", core::short_uuid(run.uuid),
       core::escape_for_display(name));
}

Response tags(store::Store& s, const store::RunInfo& run, const Request& r, const std::string& key,
              bool before_body) {
  // A tag key as every entry point takes one (store/accept.h): 1 to 256
  // bytes, no control character, not only blanks.
  // The rule's own words, as Python and watch --tag say them (twenty-second
  // hunt, B-D2: a key cut at byte 80 showed half a character).
  if (auto why = store::tag_key_problem(key)) fail(ErrorKind::kUsage, "{}", *why);
  if (before_body && (r.method == "PUT" || r.method == "DELETE")) {
    Response go_on;
    go_on.status = 100;  // a write it would make: the body decides the rest
    return go_on;
  }
  if (r.method == "PUT") {
    if (auto why = store::tag_value_problem(key, r.body)) fail(ErrorKind::kUsage, "{}", *why);
    s.set_tag(run.uuid, key, r.body);
  } else if (r.method == "DELETE") {
    s.delete_tag(run.uuid, key);
  } else {
    // A method the route has not (RFC 9110 §15.5.6: 405 with Allow).
    Response res = error_response(405, fmt::format("{} {}: tags take PUT (set) or DELETE", r.method,
                                                   core::escape_for_display(r.path)));
    res.headers.emplace_back("Allow", "PUT, DELETE");
    return res;
  }
  return json({{"tags", s.tags(run.uuid)}});
}

}  // namespace trainscope::serve::detail
