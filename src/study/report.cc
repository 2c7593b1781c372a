// A study's report: one self-contained HTML file (inline CSS and SVG, no
// network) or Markdown, in the shapes of BRIEF §2 (per-cell spread, tests
// across cells, determinism) and §4 (speed and cost against a factor), and
// of "Studies at the machine's limit" (the spread over training, pairs of
// cells compared, variance components by factor).
#include "trainscope/study/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "trainscope/core/markup.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"

namespace trainscope::study {

namespace {

// Stored text in the report's HTML: markup escaped, control bytes as \xNN
// and invalid UTF-8 as U+FFFD (the report may go to a terminal).
std::string esc(const std::string& s) { return core::xml_escape(s); }

std::string num(double v, int digits = 4) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}g}", v, digits);
}
std::string num(const std::optional<double>& v, int digits = 4) {
  return v ? num(*v, digits) : "-";
}

// Rows of the main table: one per cell.
using Rows = std::vector<std::vector<std::string>>;

std::vector<std::string> cell_header(const StudyAnalysis& a) {
  std::vector<std::string> h = {
      "cell", "varies", "runs", "mean " + a.metric, "SD (ddof 1)", "SD 95% CI (bootstrap)",
      "min",  "max"};
  if (!a.spec.sources.empty()) h.push_back("SD / SD(all)");
  for (const char* c : {"disagreement %", "logit corr.", "ensemble gain %", "bit-identical"})
    h.push_back(c);
  return h;
}

std::string audit_text(const CellAnalysis& c) {
  if (!c.audit) return "-";
  if (!c.audit->note.empty()) return c.audit->note;
  if (c.audit->identical) return fmt::format("yes ({} compared)", c.audit->compared + 1);
  return fmt::format("NO: {} differs from step {}", c.audit->first_differing_run,
                     c.audit->first_diff_step);
}

Rows cell_rows(const StudyAnalysis& a) {
  Rows rows;
  for (const auto& c : a.cells) {
    const auto& s = c.result.summary;
    std::string ci = c.result.sd_ci ? fmt::format("[{}, {}]", num(c.result.sd_ci->low),
                                                  num(c.result.sd_ci->high))
                                    : "-";
    std::vector<std::string> r = {
        c.cell,    c.vary, std::to_string(c.runs),    s.n ? num(s.mean, 6) : "-",
        num(s.sd), ci,     s.n ? num(s.min, 6) : "-", s.n ? num(s.max, 6) : "-"};
    if (!a.spec.sources.empty()) r.push_back(num(c.sd_ratio, 3));
    if (c.cross) {
      r.push_back(fmt::format("{:.2f}", c.cross->disagreement * 100));
      r.push_back(std::isnan(c.cross->logit_correlation)
                      ? "-"
                      : fmt::format("{:.4f}", c.cross->logit_correlation));
      r.push_back(
          fmt::format("{:+.2f}", (c.cross->ensemble_accuracy - c.cross->mean_accuracy) * 100));
    } else {
      r.insert(r.end(), {"-", "-", "-"});
    }
    r.push_back(audit_text(c));
    rows.push_back(r);
  }
  return rows;
}

std::vector<std::string> cost_header() {
  return {"cell",         "mean run time s",  "samples/s",
          "epoch time s", "time to target s", "epochs to target",
          "energy kWh"};
}

Rows cost_rows(const StudyAnalysis& a) {
  Rows rows;
  for (const auto& c : a.cells)
    rows.push_back({c.cell, num(c.mean_run_s), num(c.mean_samples_per_s), num(c.mean_epoch_s),
                    num(c.mean_time_to_target_s), num(c.mean_epochs_to_target, 3),
                    num(c.energy_kwh, 3)});
  return rows;
}

Rows test_rows(const StudyAnalysis& a) {
  Rows rows;
  if (!a.comparison) return rows;
  auto add = [&](const std::optional<stats::TestResult>& t) {
    if (t) rows.push_back({t->test, num(t->statistic), num(t->df), num(t->df2), num(t->p_value)});
  };
  add(a.comparison->anova);
  add(a.comparison->kruskal);
  add(a.comparison->levene);
  return rows;
}

std::string html_table(const std::vector<std::string>& header, const Rows& rows) {
  std::string o = "<table><thead><tr>";
  for (const auto& h : header) o += "<th>" + esc(h) + "</th>";
  o += "</tr></thead><tbody>\n";
  for (const auto& r : rows) {
    o += "<tr>";
    for (const auto& c : r) o += "<td>" + esc(c) + "</td>";
    o += "</tr>\n";
  }
  return o + "</tbody></table>\n";
}

std::string md_table(const std::vector<std::string>& header, const Rows& rows) {
  std::string o = "|";
  for (const auto& h : header) o += " " + core::markdown_text(h) + " |";
  o += "\n|";
  for (size_t i = 0; i < header.size(); ++i) o += " --- |";
  o += "\n";
  for (const auto& r : rows) {
    o += "|";
    for (const auto& c : r) o += " " + core::markdown_text(c) + " |";  // names from the store
    o += "\n";
  }
  return o;
}

}  // namespace

namespace {

// A chart with one column per cell: each column's points, and optionally a
// bar from low to high (an interval) with a mark at `mid`.
struct Column {
  std::string label;
  std::vector<double> points;
  std::optional<double> low, mid, high;
};

std::string column_svg(const std::string& title, const std::string& y_label,
                       const std::vector<Column>& cols) {
  const double w = std::max<double>(420, 90.0 * cols.size() + 120), h = 380, l = 80, r = 20, t = 40,
               b = 110;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& c : cols) {
    for (double v : c.points) lo = std::min(lo, v), hi = std::max(hi, v);
    for (const auto& v : {c.low, c.mid, c.high})
      if (v) lo = std::min(lo, *v), hi = std::max(hi, *v);
  }
  if (!std::isfinite(lo)) return "";
  if (hi == lo) hi = lo + std::max(1e-9, std::fabs(lo) * 1e-3), lo -= (hi - lo);
  double pad = (hi - lo) * 0.08;
  lo = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;  // an SD axis does not go below 0
  hi += pad;
  auto y = [&](double v) { return t + (h - t - b) * (1 - (v - lo) / (hi - lo)); };
  auto x = [&](size_t i) { return l + (w - l - r) * (i + 0.5) / cols.size(); };
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\"><rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/><text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>",
      w, h, l, esc(title));
  for (int k = 0; k <= 4; ++k) {
    double v = lo + (hi - lo) * k / 4;
    o += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>",
        l, w - r, y(v), l - 6, y(v) + 4, num(v, 4));
  }
  o += fmt::format(
      "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}"
      "</text>",
      (h - b + t) / 2, esc(y_label));
  for (size_t i = 0; i < cols.size(); ++i) {
    const auto& c = cols[i];
    if (c.low && c.high)
      o += fmt::format(
          "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" "
          "stroke=\"#1f77b4\" stroke-width=\"3\"/>",
          x(i), y(*c.low), y(*c.high));
    if (c.mid)
      o += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"4\" fill=\"#d62728\"/>", x(i) - 6,
          y(*c.mid) - 2);
    for (size_t k = 0; k < c.points.size(); ++k)
      o += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#1f77b4\" "
          "fill-opacity=\"0.6\"/>",
          x(i) + ((k % 7) - 3.0) * 3, y(c.points[k]));
    o += fmt::format(
        "<text transform=\"translate({:.1f},{}) rotate(40)\">{}</text>", x(i) - 4, h - b + 14,
        esc(c.label.size() > 28 ? std::string(core::utf8_prefix(c.label, 27)) + "…" : c.label));
  }
  return o + "</svg>\n";
}

std::vector<std::string> plots(const StudyAnalysis& a) {
  std::vector<std::string> out;
  std::vector<Column> strip, sd;
  for (const auto& c : a.cells) {
    strip.push_back({c.cell, c.values, {}, {}, {}});
    Column s{c.cell, {}, {}, c.result.summary.sd, {}};
    if (c.result.sd_ci) s.low = c.result.sd_ci->low, s.high = c.result.sd_ci->high;
    sd.push_back(s);
  }
  out.push_back(column_svg(a.metric + " per run, by cell", a.metric, strip));
  out.push_back(column_svg("SD of " + a.metric + " per cell, 95% bootstrap CI", "SD", sd));
  core::SvgChart loss{"train loss per step, mean over each cell's runs", "step", "loss"};
  std::map<std::string, std::map<double, std::pair<double, int>>> mean;
  for (const auto& c : a.loss_curves)
    for (size_t i = 0; i < c.x.size(); ++i) {
      auto& m = mean[c.cell][c.x[i]];
      m.first += c.y[i], ++m.second;
    }
  for (const auto& [cell, pts] : mean) {
    core::SvgSeries s{cell, {}, {}};
    for (const auto& [x, m] : pts) s.x.push_back(x), s.y.push_back(m.first / m.second);
    loss.series.push_back(s);
  }
  if (!loss.series.empty()) out.push_back(loss.render());
  return out;
}

// For each numeric grid factor: speed, cost and result against its value,
// one line per combination of the other factors (BRIEF §4).
std::vector<std::string> sweep_plots(const StudyAnalysis& a) {
  std::vector<std::string> out;
  using Get = std::optional<double> (*)(const CellAnalysis&);
  const std::vector<std::pair<std::string, Get>> figures = {
      {"samples/s",
       [](const CellAnalysis& c) -> std::optional<double> { return c.mean_samples_per_s; }},
      {"epoch time s",
       [](const CellAnalysis& c) -> std::optional<double> { return c.mean_epoch_s; }},
      {"time to target s", [](const CellAnalysis& c) { return c.mean_time_to_target_s; }},
      {"energy kWh", [](const CellAnalysis& c) -> std::optional<double> { return c.energy_kwh; }},
      {"mean result", [](const CellAnalysis& c) -> std::optional<double> {
         if (c.result.summary.n == 0) return std::nullopt;
         return c.result.summary.mean;
       }}};
  for (const auto& factor : a.spec.grid) {
    if (factor.key.rfind("seeds.", 0) == 0) continue;  // a seed is a name, not a quantity
    std::map<std::string, std::vector<std::pair<double, const CellAnalysis*>>> lines;
    double vmin = INFINITY, vmax = -INFINITY;
    for (const auto& c : a.cells) {
      std::optional<double> at;
      for (const auto& [k, v] : c.factors)
        if (k == factor.key) at = v[0];
      if (!at || c.vary == "none") continue;
      std::string label = c.cell;
      // The line's name: the cell without this factor.
      std::string key = factor.key + "=";
      for (const auto& val : factor.values) {
        auto pos = label.find(key + val);
        if (pos != std::string::npos) label.erase(pos, key.size() + val.size());
      }
      while (label.find(",,") != std::string::npos) label.erase(label.find(",,"), 1);
      if (!label.empty() && label.front() == ',') label.erase(0, 1);
      if (!label.empty() && label.back() == ',') label.pop_back();
      lines[label.empty() ? "all" : label].emplace_back(*at, &c);
      vmin = std::min(vmin, *at), vmax = std::max(vmax, *at);
    }
    if (lines.empty() || vmin == vmax) continue;
    for (const auto& [name, get] : figures) {
      core::SvgChart ch{name + " against " + factor.key, factor.key, name};
      ch.log_x = vmin > 0 && vmax / vmin >= 10;
      ch.width = 640, ch.height = 360;
      for (auto& [label, pts] : lines) {
        std::sort(pts.begin(), pts.end(), [](auto& p, auto& q) { return p.first < q.first; });
        core::SvgSeries s{label, {}, {}};
        for (const auto& [x, c] : pts)
          if (auto v = get(*c); v && std::isfinite(*v)) s.x.push_back(x), s.y.push_back(*v);
        if (!s.x.empty()) ch.series.push_back(s);
      }
      if (!ch.series.empty()) out.push_back(ch.render());
    }
  }
  return out;
}

// BRIEF §2: each varied cell against its exact-repeat twin.
Rows deterministic_rows(const StudyAnalysis& a) {
  Rows rows;
  for (const auto& c : a.cells) {
    if (!c.deterministic_value) continue;
    const auto& t = c.t_vs_deterministic;
    rows.push_back({c.cell, std::to_string(c.runs), num(c.result.summary.mean, 6),
                    num(*c.deterministic_value, 6), num(c.diff_percent_vs_deterministic, 3),
                    t ? num(t->statistic) : "-", t ? num(t->p_value) : "-"});
  }
  return rows;
}

const std::vector<std::string> kDeterministicHeader = {
    "cell", "runs", "mean", "deterministic", "Diff %", "one-sample t", "p"};

// Per cell at its last common checkpoint: the last layer and all weights.
Rows weight_rows(const StudyAnalysis& a) {
  std::map<std::string, int64_t> last_step;
  for (const auto& w : a.weights) last_step[w.cell] = std::max(last_step[w.cell], w.step);
  Rows rows;
  for (const auto& w : a.weights)
    if (w.step == last_step[w.cell] && (w.last_layer || w.layer == "(all)"))
      rows.push_back({w.cell, std::to_string(w.step), w.last_layer ? w.layer + " (last)" : w.layer,
                      std::to_string(w.runs), num(w.mean_sd), num(w.cos_min, 6), num(w.cos_mean, 6),
                      num(w.cos_max, 6)});
  return rows;
}

// Weight SD of the last layer and the cosine band over checkpoints, per cell.
std::vector<std::string> weight_plots(const StudyAnalysis& a) {
  core::SvgChart sd{"element-wise SD of the last layer's weights across runs", "step", "mean SD"};
  core::SvgChart cos{"pairwise cosine similarity of all weights (mean; min and max dashed)", "step",
                     "cosine"};
  std::map<std::string, std::array<core::SvgSeries, 4>> by_cell;
  for (const auto& w : a.weights) {
    auto& s = by_cell[w.cell];
    if (w.last_layer) s[0].x.push_back(w.step), s[0].y.push_back(w.mean_sd);
    if (w.layer != "(all)") continue;
    for (int k = 1; k < 4; ++k) s[k].x.push_back(w.step);
    s[1].y.push_back(w.cos_mean), s[2].y.push_back(w.cos_min), s[3].y.push_back(w.cos_max);
  }
  for (auto& [cell, s] : by_cell) {
    s[0].name = s[1].name = cell;
    s[2].name = cell + " min", s[3].name = cell + " max";
    s[2].dashed = s[3].dashed = true;
    sd.series.push_back(s[0]);
    for (int k = 1; k < 4; ++k) cos.series.push_back(s[k]);
  }
  if (sd.series.empty()) return {};
  return {sd.render(), cos.render()};
}

// The parts of "Studies at the machine's limit": the spread over training,
// pairs of cells compared, variance components by factor. Each is a
// section that the HTML and the Markdown report show alike.
struct Section {
  std::string title, intro;
  std::vector<std::string> header;
  Rows rows;
  std::vector<std::string> notes;
  std::vector<std::string> svgs;  // HTML only
};

constexpr size_t kMaxEpochColumns = 12;

// The epochs any cell recorded; at most kMaxEpochColumns of them, evenly
// spaced, the first and the last among them.
std::pair<std::vector<int64_t>, size_t> epoch_columns(const StudyAnalysis& a) {
  std::vector<int64_t> all;
  for (const auto& c : a.cells)
    for (const auto& e : c.epochs) all.push_back(e.epoch);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.size() <= kMaxEpochColumns) return {all, all.size()};
  std::vector<int64_t> shown;
  for (size_t k = 0; k < kMaxEpochColumns; ++k)
    shown.push_back(all[k * (all.size() - 1) / (kMaxEpochColumns - 1)]);
  return {shown, all.size()};
}

std::string epoch_entry(const EpochSpread& e, bool sources) {
  if (!e.sd) return fmt::format("- ({} run)", e.values.size());
  std::string o = num(*e.sd);
  if (e.sd_ci) o += fmt::format(" [{}, {}]", num(e.sd_ci->low), num(e.sd_ci->high));
  if (sources) o += "; ratio " + num(e.sd_ratio, 3);
  return o;
}

// A cell's name in a legend (which keeps 26 characters): a long grid
// cell's factor values alone, in the grid's order.
std::string legend_label(const CellAnalysis& c) {
  if (c.cell.size() <= 26 || c.levels.empty()) return c.cell;
  std::string o;
  for (const auto& [k, v] : c.levels) o += (o.empty() ? "" : ",") + v;
  return c.vary == "none" && c.cell.ends_with(",deterministic") ? o + ",det." : o;
}

// SD (or, for sources, the ratio to "all") against epoch, one line per cell.
std::string epoch_plot(const StudyAnalysis& a, bool ratio) {
  std::string keys;
  for (const auto& g : a.spec.grid) keys += (keys.empty() ? " (cells: " : ", ") + g.key;
  core::SvgChart ch{ratio ? "SD of " + a.metric + " / SD of the \"all\" source, by epoch"
                          : "SD of " + a.metric + " by epoch" + (keys.empty() ? "" : keys + ")"),
                    "epoch", ratio ? "SD / SD(all)" : "SD (ddof 1)"};
  ch.height = 380;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& c : a.cells) {  // "all" too (at 1): each cell keeps its colour
    core::SvgSeries s{legend_label(c), {}, {}};
    for (const auto& e : c.epochs)
      if (auto v = ratio ? e.sd_ratio : e.sd)
        s.x.push_back(static_cast<double>(e.epoch)), s.y.push_back(*v);
    if (s.x.empty()) continue;
    lo = std::min(lo, s.x.front()), hi = std::max(hi, s.x.back());
    s.points = s.x.size() == 1;  // one epoch: a point, not a line
    ch.series.push_back(s);
  }
  if (ch.series.empty()) return "";
  if (ratio) {
    core::SvgSeries ref{"ratio 0.8", {lo, hi == lo ? lo + 1 : hi}, {0.8, 0.8}};
    ref.dashed = true;
    ch.series.push_back(ref);
  }
  return ch.render();
}

Section epoch_section(const StudyAnalysis& a) {
  Section s;
  const bool sources = !a.spec.sources.empty();
  auto [shown, total] = epoch_columns(a);
  if (shown.empty()) return s;
  s.title = "Spread over training";
  s.intro = fmt::format(
      "SD (ddof 1) across each cell's runs of {} at each epoch, with its 95% bootstrap CI{}.",
      a.metric, sources ? ", and its ratio to the SD of the \"all\" source at the same epoch" : "");
  if (shown.size() < total)
    s.intro +=
        fmt::format(" {} of the {} epochs are shown; the JSON has every one.", shown.size(), total);
  s.header = {"cell"};
  for (int64_t e : shown) s.header.push_back(fmt::format("epoch {}", e));
  for (const auto& c : a.cells) {
    std::vector<std::string> r = {c.cell};
    for (int64_t e : shown) {
      auto it = std::find_if(c.epochs.begin(), c.epochs.end(),
                             [&](const EpochSpread& x) { return x.epoch == e; });
      r.push_back(it == c.epochs.end() ? "-" : epoch_entry(*it, sources));
    }
    s.rows.push_back(r);
  }
  for (bool ratio : {false, true})
    if (!ratio || sources)
      if (auto svg = epoch_plot(a, ratio); !svg.empty()) s.svgs.push_back(svg);
  return s;
}

std::string interval_text(const std::optional<stats::Interval>& i) {
  return i ? fmt::format("[{}, {}]", num(i->low), num(i->high)) : "-";
}

Section pairs_section(const StudyAnalysis& a) {
  Section s;
  if (a.pairs.empty()) return s;
  s.title = "Comparing cells";
  const auto& o = a.pairs.front().result.options;
  s.intro = a.pairs_reference.empty()
                ? fmt::format("Every pair of the {} cells", a.pairs_cells)
                : fmt::format(
                      "Each of the {} cells against the first, {} (above {} cells every pair "
                      "would be too many: {})",
                      a.pairs_cells, a.pairs_reference, kMaxAllPairsCells,
                      a.pairs_cells * (a.pairs_cells - 1) / 2);
  s.intro += fmt::format(
      ", on the final {} of their runs. P(A > B): the probability that a run of A beats a run of "
      "B, with a {}% bootstrap CI ({} resamples); the mean difference A - B with its Welch CI; "
      "the runs per side a two-sided Welch t-test at alpha {} needs to detect the observed "
      "difference with power {}.",
      a.metric, std::lround(100 * o.confidence), o.resamples, o.alpha, o.power);
  s.header = {"A",
              "B",
              "runs A",
              "runs B",
              "P(A > B)",
              "95% CI",
              "mean A - B",
              "95% CI (Welch)",
              "runs needed per side",
              "notes"};
  for (const auto& p : a.pairs) {
    const auto& c = p.result;
    s.rows.push_back({p.a, p.b, std::to_string(c.a.n), std::to_string(c.b.n),
                      num(c.p_improvement, 3), interval_text(c.p_improvement_ci),
                      num(c.mean_difference), interval_text(c.mean_difference_ci),
                      c.runs_needed ? std::to_string(*c.runs_needed) : "-",
                      c.notes.empty() ? "" : fmt::format("{}", fmt::join(c.notes, "; "))});
  }
  return s;
}

// Each random term's share of the variance, as a bar (the intervals, often
// wider than the estimates by orders of magnitude, are in the table).
std::string components_plot(const stats::FactorAnalysis& f) {
  std::vector<Column> cols;
  for (const auto& t : f.terms)
    if (!t.fixed) cols.push_back({t.name, {}, 0.0, 100 * t.share, 100 * t.share});
  return column_svg("share of the variance by term (" + f.method + ")", "share %", cols);
}

Section factors_section(const StudyAnalysis& a) {
  Section s;
  if (!a.factor_components && a.factor_notes.empty()) return s;
  s.title = "Variance by factor";
  s.notes = a.factor_notes;
  if (!a.factor_components) return s;
  const auto& f = *a.factor_components;
  s.intro = fmt::format(
      "Variance components of {} by {} over {} runs ({}), every factor random: {} estimates{}.",
      a.metric, fmt::join(f.factors, " x "), f.n,
      f.balanced ? fmt::format("balanced, {} per cell", f.replicates) : "unbalanced", f.method,
      f.method == "ANOVA" ? " with Satterthwaite intervals"
                          : " with Wald intervals on the log scale");
  s.header = {"term", "levels", "variance", "share", "95% CI", "method", "df", "F", "p"};
  for (const auto& t : f.terms) {
    const auto& an = t.anova;
    std::string f_text = an && an->f ? num(*an->f) + " (/" + an->f_denominator + ")" : "-";
    s.rows.push_back({t.name, std::to_string(t.levels), t.fixed ? "fixed" : num(t.variance),
                      t.fixed ? "-" : fmt::format("{:.1f}%", 100 * t.share),
                      interval_text(f.method == "ANOVA" ? t.anova_ci : t.reml_ci), f.method,
                      an ? num(an->df) : "-", f_text, an ? num(an->p_value) : "-"});
  }
  s.notes.insert(s.notes.end(), f.notes.begin(), f.notes.end());
  if (auto svg = components_plot(f); !svg.empty()) s.svgs.push_back(svg);
  return s;
}

std::vector<Section> limit_sections(const StudyAnalysis& a) {
  std::vector<Section> out;
  for (auto s : {epoch_section(a), pairs_section(a), factors_section(a)})
    if (!s.title.empty()) out.push_back(std::move(s));
  return out;
}

std::string html_section(const Section& s) {
  std::string o = "<h2>" + esc(s.title) + "</h2>\n";
  if (!s.intro.empty()) o += "<p>" + esc(s.intro) + "</p>\n";
  if (!s.rows.empty()) o += html_table(s.header, s.rows);
  for (const auto& n : s.notes) o += "<p class=\"note\">" + esc(n) + "</p>\n";
  for (const auto& svg : s.svgs) o += svg;
  return o;
}

std::string md_section(const Section& s) {
  std::string o = "\n## " + core::markdown_text(s.title) + "\n\n";
  if (!s.intro.empty()) o += core::markdown_text(s.intro) + "\n\n";
  if (!s.rows.empty()) o += md_table(s.header, s.rows);
  for (const auto& n : s.notes) o += "\n- " + core::markdown_text(n) + "\n";
  return o;
}

std::string summary_lines(const StudyAnalysis& a) {
  std::string o = fmt::format("{} of {} planned runs finished. Energy {} kWh", a.finished,
                              a.planned, num(a.energy_kwh, 3));
  if (a.carbon_kg_per_kwh > 0)
    o += fmt::format(", CO2 {} kg at {} kg/kWh", num(a.co2_kg, 3), num(a.carbon_kg_per_kwh, 3));
  o += ".";
  if (a.determinism_cost)
    o += fmt::format(" Exact-repeat (deterministic) cells took {:.2f}x the time of the others.",
                     *a.determinism_cost);
  if (a.comparison && a.comparison->components) {
    const auto& v = *a.comparison->components;
    o += fmt::format(
        " Between-cell share of the variance: {:.1f}% (between {} [{}, {}], within {} "
        "[{}, {}]).",
        100 * v.icc, num(v.s2_between), num(v.s2_between_ci.low), num(v.s2_between_ci.high),
        num(v.s2_within), num(v.s2_within_ci.low), num(v.s2_within_ci.high));
  }
  return o;
}

}  // namespace

std::string html_report(const StudyAnalysis& a) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>study " << esc(a.study.name)
    << "</title><style>body{font-family:sans-serif;margin:24px;max-width:1400px}"
       "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px 8px;"
       "font-size:13px;text-align:right}td:first-child,th{text-align:left}svg{margin:8px 0;"
       "display:block}.note{color:#8a4b00}</style></head><body>\n";
  o << "<h1>Study " << esc(a.study.name) << "</h1>\n<p>" << esc(a.study.uuid) << " · "
    << esc(core::format_utc(a.study.start_time)) << " · "
    << (a.spec.command.empty() ? "base config " + esc(a.spec.base.string())
                               : "command " + esc(a.spec.command))
    << "</p>\n<p>" << esc(summary_lines(a)) << "</p>\n";
  o << "<h2>" << esc(a.metric) << " per cell</h2>\n" << html_table(cell_header(a), cell_rows(a));
  if (!test_rows(a).empty())
    o << "<h2>Do the cells differ?</h2>\n"
      << html_table({"test", "statistic", "df", "df2", "p"}, test_rows(a));
  for (const auto& svg : plots(a)) o << svg;
  for (const auto& s : limit_sections(a)) o << html_section(s);
  if (!deterministic_rows(a).empty())
    o << "<h2>Against the deterministic run</h2>\n"
      << html_table(kDeterministicHeader, deterministic_rows(a));
  if (!a.weights.empty()) {
    o << "<h2>Weights across runs</h2>\n"
      << html_table({"cell", "step", "layer", "runs", "mean element-wise SD", "cosine min",
                     "cosine mean", "cosine max"},
                    weight_rows(a));
    for (const auto& svg : weight_plots(a)) o << svg;
  }
  o << "<h2>Speed and cost</h2>\n" << html_table(cost_header(), cost_rows(a));
  for (const auto& svg : sweep_plots(a)) o << svg;
  if (!a.notes.empty()) {
    o << "<h2>Notes</h2><ul>";
    for (const auto& n : a.notes) o << "<li class=\"note\">" << esc(n) << "</li>";
    o << "</ul>\n";
  }
  o << "</body></html>\n";
  return o.str();
}

std::string markdown_report(const StudyAnalysis& a) {
  std::ostringstream o;
  o << "# Study " << core::markdown_text(a.study.name) << "\n\n"
    << core::markdown_text(summary_lines(a)) << "\n\n## " << core::markdown_text(a.metric)
    << " per cell\n\n"
    << md_table(cell_header(a), cell_rows(a));
  if (!test_rows(a).empty())
    o << "\n## Do the cells differ?\n\n"
      << md_table({"test", "statistic", "df", "df2", "p"}, test_rows(a));
  for (const auto& s : limit_sections(a)) o << md_section(s);
  if (!deterministic_rows(a).empty())
    o << "\n## Against the deterministic run\n\n"
      << md_table(kDeterministicHeader, deterministic_rows(a));
  if (!a.weights.empty())
    o << "\n## Weights across runs\n\n"
      << md_table({"cell", "step", "layer", "runs", "mean element-wise SD", "cosine min",
                   "cosine mean", "cosine max"},
                  weight_rows(a));
  o << "\n## Speed and cost\n\n" << md_table(cost_header(), cost_rows(a));
  for (const auto& n : a.notes) o << "\n- " << core::markdown_text(n);
  o << "\n";
  return o.str();
}

}  // namespace trainscope::study
