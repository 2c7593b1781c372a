#include "trainscope/probes/read.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/probes/builtin.h"

namespace trainscope::probes {

namespace {

// "probe/<layer>/<kind>/<stat>" or "probe/<name>". Kinds and stats never hold
// '/', a layer may (Python's add_module takes "enc/0"), so the key is split from
// its end.
bool parse_key(const std::string& key, SeriesRef& out) {
  if (key.rfind("probe/", 0) != 0) return false;
  std::string rest = key.substr(6);
  out.key = key;
  auto b = rest.rfind('/');
  if (b == std::string::npos) {
    out.kind = rest;
    return true;
  }
  if (b == 0) return false;
  auto a = rest.rfind('/', b - 1);
  if (a == std::string::npos || a == 0) return false;
  out.layer = rest.substr(0, a);
  out.kind = rest.substr(a + 1, b - a - 1);
  out.stat = rest.substr(b + 1);
  return true;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

}  // namespace

std::vector<SeriesRef> probe_series(store::Store& store, const std::string& uuid,
                                    const ProbeFilter& f) {
  std::vector<SeriesRef> all, out;
  std::set<std::string> layers, kinds;
  for (const auto& m : store.metric_summaries(uuid)) {
    SeriesRef r;
    if (!parse_key(m.key, r)) continue;
    r.summary = m;
    if (!r.layer.empty()) layers.insert(r.layer);
    kinds.insert(r.kind);
    all.push_back(std::move(r));
  }
  if (all.empty())
    core::fail(core::ErrorKind::kNotFound,
               "run {} has no probes; train with `--set probes=standard` (or economy, full)",
               core::short_uuid(uuid));
  std::string glob = f.layer.empty() ? "*" : f.layer;
  if (glob != "*" && std::none_of(layers.begin(), layers.end(),
                                  [&](const auto& l) { return glob_match(glob, l); }))
    core::fail(core::ErrorKind::kNotFound, "no probed layer matches '{}'; the layers are: {}", glob,
               joined(layers));
  if (!f.kind.empty() && !kinds.count(f.kind))
    core::fail(core::ErrorKind::kNotFound, "run {} has no probe kind '{}'; it has: {}",
               core::short_uuid(uuid), f.kind, joined(kinds));
  for (auto& r : all) {
    bool layer_ok = glob == "*" || (!r.layer.empty() && glob_match(glob, r.layer));
    if (layer_ok && (f.kind.empty() || r.kind == f.kind) && (f.stat.empty() || r.stat == f.stat))
      out.push_back(std::move(r));
  }
  return out;
}

std::vector<RunEvent> probe_alerts(store::Store& store, const std::string& uuid) {
  std::vector<RunEvent> out;
  for (auto& e : read_events(store, uuid))
    if (e.kind == "alert") out.push_back(std::move(e));
  return out;
}

std::string series_svg(store::Store& store, const std::string& uuid,
                       const std::vector<SeriesRef>& series, const std::string& title) {
  core::SvgChart chart;
  chart.title = title;
  chart.x_label = "step";
  chart.y_label = series.empty() ? "" : series.front().kind + "/" + series.front().stat;
  bool positive = true;
  for (const auto& s : series) {
    core::SvgSeries line;
    line.name = s.layer.empty() ? s.kind : s.layer;
    for (const auto& p : store.metric(uuid, s.key)) {
      line.x.push_back(static_cast<double>(p.step));
      line.y.push_back(p.value);
      positive = positive && p.value > 0;
    }
    chart.series.push_back(std::move(line));
  }
  chart.log_y = positive && !series.empty() && series.front().stat != "mean";
  return chart.render();
}

std::string histogram_heatmap_svg(const std::vector<StepHistogram>& hs, const std::string& title) {
  const int w = 900, h = 420, left = 70, right = 20, top = 40, bottom = 50;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : hs)
    if (const Histogram& r = s.histogram; r.high > r.low || !r.counts.empty())
      lo = std::min(lo, r.low), hi = std::max(hi, r.high);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
      w, h, left, core::xml_escape(title));
  if (hs.empty() || !(hi > lo))
    return svg + "<text x=\"70\" y=\"80\">no finite values</text></svg>\n";
  double pw = w - left - right, ph = h - top - bottom, cw = pw / hs.size();
  for (size_t i = 0; i < hs.size(); ++i) {
    const Histogram& r = hs[i].histogram;
    int64_t total = 0;
    for (int64_t c : r.counts) total += c;
    size_t n = r.counts.size();
    for (size_t b = 0; b < n && total > 0; ++b) {
      if (!r.counts[b]) continue;
      double b_lo = r.low + (r.high - r.low) * b / n, b_hi = r.low + (r.high - r.low) * (b + 1) / n;
      double y1 = top + ph * (1 - (b_hi - lo) / (hi - lo)),
             y2 = top + ph * (1 - (b_lo - lo) / (hi - lo));
      double share = static_cast<double>(r.counts[b]) / total;
      int shade = static_cast<int>(255 * (1 - std::pow(share, 0.4)));
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
          "fill=\"rgb({},{},255)\"><title>step {}: {} values in [{:.4g}, {:.4g})</title></rect>\n",
          left + cw * i, y1, std::max(cw, 1.0), std::max(y2 - y1, 0.5), shade, shade, hs[i].step,
          r.counts[b], b_lo, b_hi);
    }
  }
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n"
      "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"black\"/>\n"
      "<text x=\"{4}\" y=\"{5}\" text-anchor=\"end\">{6:.4g}</text>\n"
      "<text x=\"{4}\" y=\"{2}\" text-anchor=\"end\">{7:.4g}</text>\n"
      "<text x=\"{0}\" y=\"{8}\">step {9}</text>\n"
      "<text x=\"{3}\" y=\"{8}\" text-anchor=\"end\">step {10}</text>\n",
      left, top, top + ph, left + pw, left - 4, top + 10, hi, lo, top + ph + 20, hs.front().step,
      hs.back().step);
  return svg + "</svg>\n";
}

}  // namespace trainscope::probes
