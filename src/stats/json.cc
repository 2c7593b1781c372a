// JSON and CSV of statistics over runs (stats/json.h).
#include "trainscope/stats/json.h"

#include <ostream>

#include "trainscope/core/util.h"

namespace trainscope::stats {

using format::Json;

namespace {

Json components_json(const std::optional<VarianceComponents>& v) {
  if (!v) return nullptr;
  return {{"cells", v->k},
          {"runs", v->n_total},
          {"n0", v->n0},
          {"ms_between", format::number(v->ms_between)},
          {"ms_within", format::number(v->ms_within)},
          {"f", format::number(v->f)},
          {"p_value", format::number(v->p_value)},
          {"var_between", format::number(v->s2_between)},
          {"var_between_raw", format::number(v->s2_between_raw)},
          {"var_between_ci", interval_json(v->s2_between_ci)},
          {"var_within", format::number(v->s2_within)},
          {"var_within_ci", interval_json(v->s2_within_ci)},
          {"icc", format::number(v->icc)}};
}

Json side_json(const Summary& s) {
  return {{"n", s.n}, {"mean", format::number(s.mean)}, {"sd", format::optional(s.sd)}};
}

Json factor_term_json(const FactorAnalysis& f, const FactorTerm& t) {
  Json names = Json::array();
  for (int i : t.factors) names.push_back(f.factors[i]);
  Json anova = nullptr;
  if (t.anova)
    anova = {{"ss", format::number(t.anova->ss)},
             {"df", format::number(t.anova->df)},
             {"ms", format::number(t.anova->ms)},
             {"f", format::optional(t.anova->f)},
             {"p_value", format::optional(t.anova->p_value)},
             {"f_denominator", t.anova->f_denominator}};
  return {{"name", t.name},
          {"factors", names},
          {"fixed", t.fixed},
          {"levels", t.levels},
          {"anova", anova},
          {"anova_estimate", format::optional(t.anova_estimate)},
          {"anova_ci", interval_json(t.anova_ci)},
          {"reml_estimate", format::optional(t.reml_estimate)},
          {"reml_ci", interval_json(t.reml_ci)},
          {"variance", t.fixed ? Json(nullptr) : format::number(t.variance)},
          {"share", t.fixed ? Json(nullptr) : format::number(t.share)}};
}

// A group's name: null for the runs that lack the --by field.
Json group_json(const std::string& group) {
  return group == kUnsetGroup ? Json(nullptr) : Json(group);
}

}  // namespace

Json interval_json(const std::optional<Interval>& i) {
  if (!i) return nullptr;
  return {{"low", format::number(i->low)}, {"high", format::number(i->high)}};
}

Json test_json(const std::optional<TestResult>& t) {
  if (!t) return nullptr;
  return {{"test", t->test},
          {"statistic", format::number(t->statistic)},
          {"p_value", format::number(t->p_value)},
          {"df", format::optional(t->df)},
          {"df2", format::optional(t->df2)}};
}

Json group_json(const GroupStats& g) {
  const auto& s = g.summary;
  // No run: no mean, min or max (they were 0.0; twenty-eighth hunt, B-D6).
  const auto stat = [&](double v) { return s.n > 0 ? format::number(v) : Json(); };
  return {{"group", group_json(g.group)},
          {"n", s.n},
          {"mean", stat(s.mean)},
          {"sd", format::optional(s.sd)},
          {"variance", format::optional(s.variance)},
          {"sem", format::optional(s.sem)},
          {"ci_low", format::optional(s.ci_low)},
          {"ci_high", format::optional(s.ci_high)},
          {"cv", format::optional(s.cv)},
          {"min", stat(s.min)},
          {"max", stat(s.max)},
          {"sd_bootstrap_ci", interval_json(g.sd_ci)},
          {"shapiro_wilk", test_json(g.shapiro)},
          {"diff_percent", format::optional(g.diff_percent)}};
}

Json comparison_json(const std::optional<Comparison>& c) {
  if (!c) return nullptr;
  Json pairs = Json::array();
  for (const auto& p : c->pairs)
    pairs.push_back({{"a", group_json(p.a)},
                     {"b", group_json(p.b)},
                     {"welch", test_json(p.welch)},
                     {"p_holm", format::number(p.p_holm)},
                     {"hedges_g", format::optional(p.hedges_g)}});
  return {{"anova", test_json(c->anova)},
          {"kruskal_wallis", test_json(c->kruskal)},
          {"brown_forsythe", test_json(c->levene)},
          {"eta_squared", format::optional(c->eta_squared)},
          {"variance_components", components_json(c->components)},
          {"pairs", pairs}};
}

Json pair_comparison_json(const PairComparison& c) {
  const auto& o = c.options;
  return {{"summary_a", side_json(c.a)},
          {"summary_b", side_json(c.b)},
          {"p_improvement", format::number(c.p_improvement)},
          {"p_improvement_ci", interval_json(c.p_improvement_ci)},
          {"mean_difference", format::number(c.mean_difference)},
          {"mean_difference_ci", interval_json(c.mean_difference_ci)},
          {"welch_df", format::optional(c.welch_df)},
          {"mean_difference_bootstrap_ci", interval_json(c.mean_difference_bootstrap_ci)},
          {"delta", format::number(c.delta)},
          {"runs_needed", c.runs_needed ? Json(*c.runs_needed) : Json(nullptr)},
          {"alpha", o.alpha},
          {"power", o.power},
          {"confidence", o.confidence},
          {"resamples", o.resamples},
          {"seed", o.seed},
          {"notes", c.notes}};
}

Json factor_analysis_json(const FactorAnalysis& f) {
  Json terms = Json::array();
  for (const auto& t : f.terms) terms.push_back(factor_term_json(f, t));
  return {{"factors", f.factors},
          {"fixed", f.fixed},
          {"n", f.n},
          {"balanced", f.balanced},
          {"replicates", f.replicates},
          {"method", f.method},
          {"confidence", f.confidence},
          {"reml_log_likelihood",
           f.reml_iterations ? format::number(f.reml_log_likelihood) : Json(nullptr)},
          {"terms", terms},
          {"notes", f.notes}};
}

Json metric_stats_json(const MetricStats& m) {
  Json groups = Json::array();
  for (const auto& g : m.groups) groups.push_back(group_json(g));
  return {{"metric", m.metric},
          {"ddof", m.options.ddof},
          {"confidence", m.options.confidence},
          {"bootstrap_resamples", m.options.bootstrap_resamples},
          {"seed", m.options.seed},
          {"reference", format::optional(m.options.reference)},
          {"groups", groups},
          {"comparison", comparison_json(m.comparison)},
          {"notes", m.notes}};
}

void metric_stats_csv(std::ostream& out, const MetricStats& m) {
  out << "metric,group,n,mean,sd,ci_low,ci_high,sd_ci_low,sd_ci_high,cv,min,max,diff_percent\n";
  auto cell = [](const std::optional<double>& v) {
    return v ? core::format_double(*v) : std::string();
  };
  for (const auto& g : m.groups) {
    const auto& s = g.summary;
    out << core::csv_field(m.metric) << ','
        << (g.group == kUnsetGroup ? "" : core::csv_field(g.group)) << ',' << s.n << ','
        << core::format_double(s.mean) << ',' << cell(s.sd) << ',' << cell(s.ci_low) << ','
        << cell(s.ci_high) << ',' << (g.sd_ci ? core::format_double(g.sd_ci->low) : "") << ','
        << (g.sd_ci ? core::format_double(g.sd_ci->high) : "") << ',' << cell(s.cv) << ','
        << core::format_double(s.min) << ',' << core::format_double(s.max) << ','
        << cell(g.diff_percent) << '\n';
  }
}

}  // namespace trainscope::stats
