// JSON and CSV of statistics over runs (stats/runs.h).
#include <ostream>

#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::format {

namespace {

template <typename T>
Json opt(const std::optional<T>& v) {
  if (!v) return nullptr;
  return number(*v);
}

Json interval(const std::optional<stats::Interval>& i) {
  if (!i) return nullptr;
  return {{"low", number(i->low)}, {"high", number(i->high)}};
}

Json test(const std::optional<stats::TestResult>& t) {
  if (!t) return nullptr;
  return {{"test", t->test},
          {"statistic", number(t->statistic)},
          {"p_value", number(t->p_value)},
          {"df", opt(t->df)},
          {"df2", opt(t->df2)}};
}

Json group(const stats::GroupStats& g) {
  const auto& s = g.summary;
  return {{"group", g.group},
          {"n", s.n},
          {"mean", number(s.mean)},
          {"sd", opt(s.sd)},
          {"variance", opt(s.variance)},
          {"sem", opt(s.sem)},
          {"ci_low", opt(s.ci_low)},
          {"ci_high", opt(s.ci_high)},
          {"cv", opt(s.cv)},
          {"min", number(s.min)},
          {"max", number(s.max)},
          {"sd_bootstrap_ci", interval(g.sd_ci)},
          {"shapiro_wilk", test(g.shapiro)},
          {"diff_percent", opt(g.diff_percent)}};
}

Json components(const std::optional<stats::VarianceComponents>& v) {
  if (!v) return nullptr;
  return {{"cells", v->k},
          {"runs", v->n_total},
          {"n0", v->n0},
          {"ms_between", number(v->ms_between)},
          {"ms_within", number(v->ms_within)},
          {"f", number(v->f)},
          {"p_value", number(v->p_value)},
          {"var_between", number(v->s2_between)},
          {"var_between_raw", number(v->s2_between_raw)},
          {"var_between_ci", interval(v->s2_between_ci)},
          {"var_within", number(v->s2_within)},
          {"var_within_ci", interval(v->s2_within_ci)},
          {"icc", number(v->icc)}};
}

Json comparison(const std::optional<stats::Comparison>& c) {
  if (!c) return nullptr;
  Json pairs = Json::array();
  for (const auto& p : c->pairs)
    pairs.push_back({{"a", p.a},
                     {"b", p.b},
                     {"welch", test(p.welch)},
                     {"p_holm", number(p.p_holm)},
                     {"hedges_g", opt(p.hedges_g)}});
  return {{"anova", test(c->anova)},
          {"kruskal_wallis", test(c->kruskal)},
          {"brown_forsythe", test(c->levene)},
          {"eta_squared", opt(c->eta_squared)},
          {"variance_components", components(c->components)},
          {"pairs", pairs}};
}

Json epochs(const study::CellAnalysis& c) {
  Json out = Json::array();
  for (const auto& e : c.epochs)
    out.push_back({{"epoch", e.epoch},
                   {"runs", e.values.size()},
                   {"mean", number(e.mean)},
                   {"sd", opt(e.sd)},
                   {"sd_bootstrap_ci", interval(e.sd_ci)},
                   {"sd_ratio_to_all", opt(e.sd_ratio)}});
  return out;
}

Json cell(const study::CellAnalysis& c) {
  Json j = group(c.result);
  j["cell"] = c.cell;
  j["varies"] = c.vary;
  j["runs"] = c.runs;
  j["values"] = c.values;
  j["sd_ratio_to_all"] = opt(c.sd_ratio);
  j["mean_run_s"] = number(c.mean_run_s);
  j["mean_samples_per_s"] = number(c.mean_samples_per_s);
  j["mean_epoch_s"] = number(c.mean_epoch_s);
  j["mean_time_to_target_s"] = opt(c.mean_time_to_target_s);
  j["mean_epochs_to_target"] = opt(c.mean_epochs_to_target);
  j["deterministic_value"] = opt(c.deterministic_value);
  j["diff_percent_vs_deterministic"] = opt(c.diff_percent_vs_deterministic);
  j["t_vs_deterministic"] = test(c.t_vs_deterministic);
  j["energy_kwh"] = number(c.energy_kwh);
  j["epochs"] = epochs(c);
  j["cross_run"] = nullptr;
  if (c.cross)
    j["cross_run"] = {{"runs", c.cross->runs},
                      {"disagreement", number(c.cross->disagreement)},
                      {"logit_correlation", number(c.cross->logit_correlation)},
                      {"mean_accuracy", number(c.cross->mean_accuracy)},
                      {"ensemble_accuracy", number(c.cross->ensemble_accuracy)}};
  j["audit"] = nullptr;
  if (c.audit)
    j["audit"] = {{"identical", c.audit->identical},
                  {"compared", c.audit->compared},
                  {"first_differing_run", c.audit->first_differing_run},
                  {"first_diff_step", c.audit->first_diff_step},
                  {"note", c.audit->note}};
  return j;
}

Json side(const stats::Summary& s) {
  return {{"n", s.n}, {"mean", number(s.mean)}, {"sd", opt(s.sd)}};
}

// stats::compare of each pair of cells (study/report.h).
Json pair_comparisons(const study::StudyAnalysis& a) {
  Json pairs = Json::array();
  for (const auto& p : a.pairs) {
    Json j = pair_comparison(p.result);
    j["a"] = p.a;
    j["b"] = p.b;
    pairs.push_back(j);
  }
  stats::CompareOptions o;
  if (!a.pairs.empty()) o = a.pairs.front().result.options;
  return {{"cells", a.pairs_cells},
          {"reference", a.pairs_reference.empty() ? Json(nullptr) : Json(a.pairs_reference)},
          {"confidence", o.confidence},
          {"resamples", o.resamples},
          {"seed", o.seed},
          {"alpha", o.alpha},
          {"power", o.power},
          {"pairs", pairs}};
}

Json factor_term(const stats::FactorAnalysis& f, const stats::FactorTerm& t) {
  Json names = Json::array();
  for (int i : t.factors) names.push_back(f.factors[i]);
  Json anova = nullptr;
  if (t.anova)
    anova = {{"ss", number(t.anova->ss)},        {"df", number(t.anova->df)},
             {"ms", number(t.anova->ms)},        {"f", opt(t.anova->f)},
             {"p_value", opt(t.anova->p_value)}, {"f_denominator", t.anova->f_denominator}};
  return {{"name", t.name},
          {"factors", names},
          {"fixed", t.fixed},
          {"levels", t.levels},
          {"anova", anova},
          {"anova_estimate", opt(t.anova_estimate)},
          {"anova_ci", interval(t.anova_ci)},
          {"reml_estimate", opt(t.reml_estimate)},
          {"reml_ci", interval(t.reml_ci)},
          {"variance", t.fixed ? Json(nullptr) : number(t.variance)},
          {"share", t.fixed ? Json(nullptr) : number(t.share)}};
}

// Variance components by grid factor (stats/factors.h); null for a study
// that has none.
Json factor_components(const study::StudyAnalysis& a) {
  if (!a.factor_components) return nullptr;
  return factor_analysis(*a.factor_components);
}

Json cell_status(const study::CellStatus& c) {
  return {{"cell", c.cell},       {"planned", c.planned}, {"finished", c.finished},
          {"running", c.running}, {"stale", c.stale},     {"failed", c.failed},
          {"pending", c.pending}};
}

}  // namespace

Json pair_comparison(const stats::PairComparison& c) {
  const auto& o = c.options;
  return {{"summary_a", side(c.a)},
          {"summary_b", side(c.b)},
          {"p_improvement", number(c.p_improvement)},
          {"p_improvement_ci", interval(c.p_improvement_ci)},
          {"mean_difference", number(c.mean_difference)},
          {"mean_difference_ci", interval(c.mean_difference_ci)},
          {"welch_df", opt(c.welch_df)},
          {"mean_difference_bootstrap_ci", interval(c.mean_difference_bootstrap_ci)},
          {"delta", number(c.delta)},
          {"runs_needed", c.runs_needed ? Json(*c.runs_needed) : Json(nullptr)},
          {"alpha", o.alpha},
          {"power", o.power},
          {"confidence", o.confidence},
          {"resamples", o.resamples},
          {"seed", o.seed},
          {"notes", c.notes}};
}

Json factor_analysis(const stats::FactorAnalysis& f) {
  Json terms = Json::array();
  for (const auto& t : f.terms) terms.push_back(factor_term(f, t));
  return {
      {"factors", f.factors},
      {"fixed", f.fixed},
      {"n", f.n},
      {"balanced", f.balanced},
      {"replicates", f.replicates},
      {"method", f.method},
      {"confidence", f.confidence},
      {"reml_log_likelihood", f.reml_iterations ? number(f.reml_log_likelihood) : Json(nullptr)},
      {"terms", terms},
      {"notes", f.notes}};
}

Json study_status(const study::StudyStatus& s) {
  Json cells = Json::array();
  for (const auto& c : s.cells) cells.push_back(cell_status(c));
  Json j = {{"study", run(s.study, false)},
            {"liveness", {{"status", s.liveness.status}, {"note", s.liveness.note}}},
            {"cells", cells},
            {"total", cell_status(s.total)},
            {"mean_run_s", number(s.mean_run_s)}};
  if (!s.slurm_jobs.empty())
    j["slurm"] = {{"jobs", s.slurm_jobs},
                  {"queue", s.slurm_queue},
                  {"error", s.slurm_error.empty() ? Json() : Json(s.slurm_error)}};
  return j;
}

Json study_analysis(const study::StudyAnalysis& a) {
  Json cells = Json::array();
  for (const auto& c : a.cells) cells.push_back(cell(c));
  Json weights = Json::array();
  for (const auto& w : a.weights)
    weights.push_back({{"cell", w.cell},
                       {"step", w.step},
                       {"layer", w.layer},
                       {"last_layer", w.last_layer},
                       {"runs", w.runs},
                       {"mean_sd", number(w.mean_sd)},
                       {"cosine_min", number(w.cos_min)},
                       {"cosine_mean", number(w.cos_mean)},
                       {"cosine_max", number(w.cos_max)}});
  return {{"study", run(a.study, false)},
          {"metric", a.metric},
          {"planned", a.planned},
          {"finished", a.finished},
          {"cells", cells},
          {"comparison", comparison(a.comparison)},
          {"energy_kwh", number(a.energy_kwh)},
          {"co2_kg", number(a.co2_kg)},
          {"carbon_kg_per_kwh", number(a.carbon_kg_per_kwh)},
          {"determinism_cost", opt(a.determinism_cost)},
          {"weights", weights},
          {"pair_comparisons", pair_comparisons(a)},
          {"factor_components", factor_components(a)},
          {"factor_notes", a.factor_notes},
          {"notes", a.notes}};
}

Json metric_stats(const stats::MetricStats& m) {
  Json groups = Json::array();
  for (const auto& g : m.groups) groups.push_back(group(g));
  return {{"metric", m.metric},
          {"ddof", m.options.ddof},
          {"confidence", m.options.confidence},
          {"bootstrap_resamples", m.options.bootstrap_resamples},
          {"seed", m.options.seed},
          {"reference", opt(m.options.reference)},
          {"groups", groups},
          {"comparison", comparison(m.comparison)},
          {"notes", m.notes}};
}

void metric_stats_csv(std::ostream& out, const stats::MetricStats& m) {
  out << "metric,group,n,mean,sd,ci_low,ci_high,sd_ci_low,sd_ci_high,cv,min,max,diff_percent\n";
  auto cell = [](const std::optional<double>& v) {
    return v ? core::format_double(*v) : std::string();
  };
  for (const auto& g : m.groups) {
    const auto& s = g.summary;
    out << core::csv_field(m.metric) << ',' << core::csv_field(g.group) << ',' << s.n << ','
        << core::format_double(s.mean) << ',' << cell(s.sd) << ',' << cell(s.ci_low) << ','
        << cell(s.ci_high) << ',' << (g.sd_ci ? core::format_double(g.sd_ci->low) : "") << ','
        << (g.sd_ci ? core::format_double(g.sd_ci->high) : "") << ',' << cell(s.cv) << ','
        << core::format_double(s.min) << ',' << core::format_double(s.max) << ','
        << cell(g.diff_percent) << '\n';
  }
}

}  // namespace trainscope::format
