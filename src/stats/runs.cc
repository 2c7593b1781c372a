// Statistics over recorded runs: collect one value per run, then summarise
// each group and compare the groups.
#include "trainscope/stats/runs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <variant>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/query.h"

namespace trainscope::stats {

using core::Error;
using core::ErrorKind;
using core::fail;

Reduce parse_reduce(const std::string& name) {
  if (name == "last") return Reduce::kLast;
  if (name == "min") return Reduce::kMin;
  if (name == "max") return Reduce::kMax;
  fail(ErrorKind::kUsage, "reduce '{}' is unknown: use last, min or max", name);
}

namespace {

std::optional<double> reduce(const std::vector<store::MetricPoint>& points, Reduce r) {
  if (points.empty()) return std::nullopt;
  if (r == Reduce::kLast) return points.back().value;
  double v = r == Reduce::kMin ? INFINITY : -INFINITY;
  for (const auto& p : points) v = r == Reduce::kMin ? std::min(v, p.value) : std::max(v, p.value);
  return v;
}

std::vector<store::RunInfo> selected_runs(store::Store& store, const Selection& s) {
  if (s.runs.empty()) {
    std::vector<store::RunInfo> out;
    for (auto& r : store.list_runs(s.filter))
      if (r.status == store::RunStatus::kFinished && (!s.only || s.only->count(r.uuid)))
        out.push_back(r);
    return out;
  }
  std::vector<store::RunInfo> out;
  for (const auto& ref : s.runs) out.push_back(store.resolve_run(ref));
  return out;
}

}  // namespace

std::string group_label(const std::string& text) {
  const bool decimal = !text.empty() && text.find_first_of("xXpP") == std::string::npos &&
                       (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-' ||
                        text[0] == '+' || text[0] == '.');
  if (!decimal) return text;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return text;
  return core::format_double(v == 0 ? 0.0 : v);  // -0 is 0, as a filter compares it
}

namespace {

// The group of a run for --by: a field as the filter language names it
// (params.KEY, tags.KEY, experiment, status, host, name, ...), or any
// other key as a params key (optimizer.name, lr), as before.
std::string group_of(store::Store& store, const store::RunInfo& r, const std::string& by) {
  std::string head = by.substr(0, by.find('.'));
  std::transform(head.begin(), head.end(), head.begin(), ::tolower);
  static const std::set<std::string> sections = {"params",     "param",     "tags", "tag",
                                                 "attributes", "attribute", "run"};
  const bool sectioned = by.find('.') != std::string::npos && sections.count(head);
  if (head == "metrics" || head == "metric")
    fail(ErrorKind::kUsage,
         "--by {}: group by a param, a tag or a run attribute; a metric is what stats "
         "summarises (give it with --metric)",
         by);
  const std::string field = sectioned || store::is_run_attribute(by) ? by : "params." + by;
  store::RunRow row{r, store.params(r.uuid), store.tags(r.uuid), {}};
  const store::FieldValue v = store::field_value(row, field);
  if (const auto* text = std::get_if<std::string>(&v)) return group_label(*text);
  if (const auto* number = std::get_if<double>(&v)) return core::format_double(*number);
  return kUnsetGroup;
}

}  // namespace

std::vector<RunValue> collect(store::Store& store, const Selection& s) {
  std::vector<RunValue> out;
  for (const auto& r : selected_runs(store, s)) {
    auto v = reduce(store.metric(r.uuid, s.metric), s.reduce);
    if (!v) {
      if (!s.runs.empty())
        fail(ErrorKind::kNotFound, "run {} has no metric '{}': see `trainscope runs show {}`",
             core::short_uuid(r.uuid), s.metric, core::short_uuid(r.uuid));
      continue;
    }
    const std::string group = s.by.empty() ? std::string() : group_of(store, r, s.by);
    out.push_back({r.uuid, r.name, group, *v});
  }
  if (out.empty())
    fail(ErrorKind::kNotFound,
         "no finished run has metric '{}': check the name with `trainscope "
         "runs show RUN`",
         s.metric);
  // Oldest first, so that tables read in the order the runs were made.
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

// Runs `f`, turning a statistic that the data cannot answer into a note.
template <typename F>
auto attempt(std::vector<std::string>& notes, const std::string& what, F f)
    -> std::optional<decltype(f())> {
  try {
    return f();
  } catch (const Error& e) {
    notes.push_back(what + ": " + e.what());
    return std::nullopt;
  }
}

GroupStats group_stats(const std::string& name, const std::vector<double>& x,
                       const AnalysisOptions& o, std::vector<std::string>& notes) {
  GroupStats g;
  std::string label = name.empty() ? "all runs" : group_text(name);
  g.group = name;
  g.summary = summarize(x, o.ddof, o.confidence, label);
  if (!g.summary.sd) notes.push_back(label + ": one run, no spread");
  bool constant = g.summary.min == g.summary.max;
  if (x.size() >= 2 && !constant)
    g.sd_ci = attempt(notes, label + " SD interval", [&] {
      return bootstrap_sd_ci(x, o.ddof, o.bootstrap_resamples, o.seed, o.confidence);
    });
  if (constant && x.size() >= 2)
    notes.push_back(label + ": every run gave " + fmt::format("{}", x[0]) +
                    " (bit-identical or saturated)");
  if (x.size() >= 3 && !constant)
    g.shapiro = attempt(notes, label + " Shapiro-Wilk", [&] {
      return o.shapiro_as_scipy ? shapiro_wilk_as_scipy(x) : shapiro_wilk(x);
    });
  if (o.reference) g.diff_percent = diff_percent(x, *o.reference);
  return g;
}

Comparison compare(const std::vector<std::string>& names,
                   const std::vector<std::vector<double>>& groups, std::vector<std::string>& n) {
  Comparison c;
  c.anova = attempt(n, "ANOVA", [&] { return anova_oneway(groups); });
  c.kruskal = attempt(n, "Kruskal-Wallis", [&] { return kruskal_wallis(groups); });
  c.levene = attempt(n, "Brown-Forsythe", [&] { return levene(groups, "median"); });
  c.eta_squared = attempt(n, "eta squared", [&] { return eta_squared(groups); });
  c.components = attempt(n, "variance components", [&] { return variance_components(groups); });
  std::vector<double> p;
  for (size_t i = 0; i < groups.size(); ++i)
    for (size_t j = i + 1; j < groups.size(); ++j) {
      auto w = attempt(n, group_text(names[i]) + " vs " + group_text(names[j]),
                       [&] { return welch_t_test(groups[i], groups[j]); });
      if (!w) continue;
      PairTest t{names[i], names[j], *w, 1, std::nullopt};
      t.hedges_g = attempt(n, "Hedges' g", [&] { return hedges_g(groups[i], groups[j]); });
      c.pairs.push_back(t);
      p.push_back(w->p_value);
    }
  std::vector<double> adj = holm(p);
  for (size_t i = 0; i < c.pairs.size(); ++i) c.pairs[i].p_holm = adj[i];
  return c;
}

}  // namespace

std::vector<RunValue> finite_values(const std::vector<RunValue>& values, const std::string& metric,
                                    std::vector<std::string>& notes) {
  std::vector<RunValue> out;
  for (const auto& v : values) {
    if (std::isfinite(v.value) && std::fabs(v.value) <= kLargestValue)
      out.push_back(v);
    else if (!std::isfinite(v.value))
      notes.push_back(
          fmt::format("run {} left out: its {} is {}", core::short_uuid(v.run), metric, v.value));
    else  // a variance of it would be inf, a mean of several maybe too
      notes.push_back(
          fmt::format("run {} left out: its {} is {}, beyond ±{}, where its square "
                      "overflows",
                      core::short_uuid(v.run), metric, v.value, kLargestValue));
  }
  return out;
}

MetricStats analyse(const std::string& metric, const std::vector<RunValue>& values,
                    const AnalysisOptions& o) {
  MetricStats m;
  m.metric = metric;
  m.options = o;
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> by;
  for (const auto& v : finite_values(values, metric, m.notes)) {
    if (!by.count(v.group)) names.push_back(v.group);
    by[v.group].push_back(v.value);
  }
  std::vector<std::vector<double>> groups;
  for (const auto& name : names) {
    groups.push_back(by[name]);
    m.groups.push_back(group_stats(name, by[name], o, m.notes));
  }
  if (groups.empty())
    fail(ErrorKind::kUsage, "no run has a finite {} within ±{}: nothing to summarise{}", metric,
         kLargestValue, m.notes.empty() ? "" : " (" + m.notes.front() + ")");
  if (groups.size() >= 2) m.comparison = compare(names, groups, m.notes);
  return m;
}

}  // namespace trainscope::stats
