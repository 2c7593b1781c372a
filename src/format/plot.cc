#include "trainscope/format/plot.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/format/axes.h"
#include "trainscope/format/format.h"
#include "trainscope/store/store.h"

namespace trainscope::format {

namespace {

std::vector<double> ema(const std::vector<double>& v, double w) {
  std::vector<double> out;
  double s = 0, weight = 1;
  for (double x : v) {
    if (!std::isfinite(x)) {
      out.push_back(x);
      continue;
    }
    s = w * s + (1 - w) * x;
    weight *= w;
    out.push_back(w > 0 ? s / (1 - weight) : x);
  }
  return out;
}

// One run's curve of KEY on the x axis asked for: epoch metrics at the step
// their epoch ended, step metrics at their fractional epoch (format/axes.h).
Curve curve_of(const store::RunInfo& r, const RunAxes& axes, const std::string& key,
               const std::vector<store::MetricPoint>& pts, const PlotOptions& o) {
  Curve c{r.uuid, r.name, key, {}, {}, {}};
  const SeriesAxis& axis = axes.of(key);
  for (const auto& p : pts) {
    const PointX px = point_x(axes, axis, p.step);
    c.x.push_back(o.x == "step"    ? px.step
                  : o.x == "epoch" ? px.epoch
                                   : store::since_start(r, p.wall_time));
    c.y.push_back(p.value);
  }
  c.smoothed = ema(c.y, o.smooth);
  return c;
}

// The keys KEY stands for in a run: itself if recorded, else the learning
// curves sharing the chart KEY names ("loss": train/loss, test/loss, ...).
std::vector<std::string> keys_for(const RunAxes& axes, const std::string& key) {
  if (axes.series.count(key)) return {key};
  std::vector<std::string> out;
  for (const auto& [k, a] : axes.series)
    if (a.chart == key && a.group == SeriesGroup::kLearning) out.push_back(k);
  return out;
}

}  // namespace

std::vector<Curve> metric_curves(store::Store& store, const std::vector<store::RunInfo>& runs,
                                 const std::vector<std::string>& keys, const PlotOptions& o) {
  if (o.x != "step" && o.x != "epoch" && o.x != "time")
    core::fail(core::ErrorKind::kUsage, "--x '{}': use step, epoch or time", o.x);
  if (!(o.smooth >= 0 && o.smooth < 1))
    core::fail(core::ErrorKind::kUsage, "--smooth {}: a weight in [0, 1), e.g. 0.6", o.smooth);
  std::vector<RunAxes> axes;
  for (const auto& r : runs) {
    axes.push_back(run_axes(store, r.uuid));
    if (o.x == "epoch" && axes.back().epochs.empty())
      core::fail(core::ErrorKind::kNotFound, "run {} recorded no epoch to plot by; use --x step",
                 core::short_uuid(r.uuid));
  }
  std::vector<Curve> out;
  for (const auto& key : keys) {
    size_t before = out.size();
    for (size_t i = 0; i < runs.size(); ++i)
      for (const auto& k : keys_for(axes[i], key)) {
        auto pts = store.metric(runs[i].uuid, k);
        if (!pts.empty()) out.push_back(curve_of(runs[i], axes[i], k, pts, o));
      }
    if (out.size() == before)
      core::fail(core::ErrorKind::kNotFound,
                 "no run given has the metric '{}'; `trainscope runs show RUN` lists its metrics",
                 key);
  }
  return out;
}

std::string curves_svg(const std::vector<Curve>& curves, const PlotOptions& o) {
  core::SvgChart chart;
  chart.x_label = o.x == "time" ? "seconds since the run started" : o.x;
  chart.log_y = o.log_y;
  std::set<std::string> keys;
  for (const auto& c : curves) keys.insert(c.key);
  for (const auto& k : keys) chart.title += (chart.title.empty() ? "" : ", ") + k;
  chart.y_label = keys.size() == 1 ? *keys.begin() : "value";
  for (const auto& c : curves) {
    std::string label = (c.run_name.empty() ? core::short_uuid(c.run) : c.run_name) +
                        (keys.size() > 1 ? " " + c.key : "");
    if (o.smooth > 0) {
      chart.series.push_back({label + " (raw)", c.x, c.y, true, false});
      chart.series.push_back({label, c.x, c.smoothed, false, false});
    } else {
      chart.series.push_back({label, c.x, c.y, false, false});
    }
  }
  return chart.render();
}

void curves_csv(std::ostream& out, const std::vector<Curve>& curves) {
  out << "run,name,key,x,value,smoothed\n";
  for (const auto& c : curves)
    for (size_t i = 0; i < c.x.size(); ++i)
      out << core::csv_field(c.run) << "," << core::csv_field(c.run_name) << ","
          << core::csv_field(c.key) << "," << core::format_double(c.x[i]) << ","
          << core::format_double(c.y[i]) << "," << core::format_double(c.smoothed[i]) << "\n";
}

void curves_json(std::ostream& out, const std::vector<Curve>& curves, const PlotOptions& options) {
  Json all = Json::array();
  for (const auto& c : curves) {
    Json x = Json::array(), y = Json::array(), smoothed = Json::array();
    for (size_t i = 0; i < c.x.size(); ++i) {
      x.push_back(std::isnan(c.x[i]) ? Json() : Json(c.x[i]));
      y.push_back(number(c.y[i]));
      smoothed.push_back(number(c.smoothed[i]));
    }
    all.push_back({{"run", c.run},
                   {"name", c.run_name},
                   {"key", c.key},
                   {"x", std::move(x)},
                   {"value", std::move(y)},
                   {"smoothed", std::move(smoothed)}});
  }
  out << Json{{"x", options.x}, {"smooth", options.smooth}, {"curves", std::move(all)}}.dump(
             2, ' ', false, kInvalidUtf8)
      << "\n";
}

}  // namespace trainscope::format
