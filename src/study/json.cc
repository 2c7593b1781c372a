// JSON of a study's status and analysis (study/json.h).
#include "trainscope/study/json.h"

#include <cmath>

#include "trainscope/stats/json.h"

namespace trainscope::study {

using format::Json;

namespace {

Json optional_text(const std::string& s) { return s.empty() ? Json() : Json(s); }

Json epochs_json(const CellAnalysis& c) {
  Json out = Json::array();
  for (const auto& e : c.epochs)
    out.push_back({{"epoch", e.epoch},
                   {"runs", e.values.size()},
                   {"mean", format::number(e.mean)},
                   {"sd", format::optional(e.sd)},
                   {"sd_bootstrap_ci", stats::interval_json(e.sd_ci)},
                   {"sd_ratio_to_all", format::optional(e.sd_ratio)}});
  return out;
}

Json cell_json(const CellAnalysis& c) {
  Json j = stats::group_json(c.result);
  j["cell"] = c.cell;
  j["varies"] = c.vary;
  j["runs"] = c.runs;
  j["values"] = c.values;
  j["sd_ratio_to_all"] = format::optional(c.sd_ratio);
  // Means over no finished run are none: null, as a mean time to target.
  auto mean = [&](double v) {
    return c.runs == 0 || !std::isfinite(v) ? format::Json() : format::number(v);
  };
  j["mean_run_s"] = mean(c.mean_run_s);
  j["mean_samples_per_s"] = mean(c.mean_samples_per_s);
  j["mean_epoch_s"] = mean(c.mean_epoch_s);
  j["mean_time_to_target_s"] = format::optional(c.mean_time_to_target_s);
  j["mean_epochs_to_target"] = format::optional(c.mean_epochs_to_target);
  j["deterministic_value"] = format::optional(c.deterministic_value);
  j["diff_percent_vs_deterministic"] = format::optional(c.diff_percent_vs_deterministic);
  j["t_vs_deterministic"] = stats::test_json(c.t_vs_deterministic);
  j["energy_kwh"] = mean(c.energy_kwh);
  j["epochs"] = epochs_json(c);
  j["cross_run"] = nullptr;
  if (c.cross)
    j["cross_run"] = {{"runs", c.cross->runs},
                      {"disagreement", format::number(c.cross->disagreement)},
                      {"logit_correlation", format::number(c.cross->logit_correlation)},
                      {"mean_accuracy", format::number(c.cross->mean_accuracy)},
                      {"ensemble_accuracy", format::number(c.cross->ensemble_accuracy)}};
  j["audit"] = nullptr;
  if (c.audit)
    j["audit"] = {{"identical", c.audit->identical},
                  {"compared", c.audit->compared},
                  {"first_differing_run", c.audit->first_differing_run},
                  {"first_diff_step", c.audit->first_diff_step},
                  {"note", c.audit->note}};
  return j;
}

// stats::compare of each pair of cells (study/report.h).
Json pair_comparisons_json(const StudyAnalysis& a) {
  Json pairs = Json::array();
  for (const auto& p : a.pairs) {
    Json j = stats::pair_comparison_json(p.result);
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

// Variance components by grid factor (stats/factors.h); null for a study
// that has none.
Json factor_components_json(const StudyAnalysis& a) {
  if (!a.factor_components) return nullptr;
  return stats::factor_analysis_json(*a.factor_components);
}

Json cell_status_json(const CellStatus& c) {
  return {{"cell", c.cell},       {"planned", c.planned}, {"finished", c.finished},
          {"running", c.running}, {"stale", c.stale},     {"failed", c.failed},
          {"pending", c.pending}};
}

}  // namespace

Json study_status_json(const StudyStatus& s) {
  Json cells = Json::array();
  for (const auto& c : s.cells) cells.push_back(cell_status_json(c));
  Json j = {{"study", format::run(s.study, false, s.liveness)},
            {"liveness", {{"status", s.liveness.status}, {"note", s.liveness.note}}},
            {"cells", cells},
            {"total", cell_status_json(s.total)},
            {"mean_run_s", std::isnan(s.mean_run_s) ? Json() : format::number(s.mean_run_s)},
            {"recorded_nothing", s.recorded_nothing},
            {"recorded_nothing_example", optional_text(s.recorded_nothing_example)},
            {"gave_up", s.gave_up},
            {"gave_up_example", optional_text(s.gave_up_example)},
            {"set_aside", s.set_aside}};
  if (!s.slurm_jobs.empty())
    j["slurm"] = {{"jobs", s.slurm_jobs},
                  {"queue", s.slurm_queue},
                  {"error", s.slurm_error.empty() ? Json() : Json(s.slurm_error)}};
  return j;
}

Json study_analysis_json(const StudyAnalysis& a) {
  Json cells = Json::array();
  for (const auto& c : a.cells) cells.push_back(cell_json(c));
  Json weights = Json::array();
  for (const auto& w : a.weights)
    weights.push_back({{"cell", w.cell},
                       {"step", w.step},
                       {"layer", w.layer},
                       {"last_layer", w.last_layer},
                       {"runs", w.runs},
                       {"mean_sd", format::number(w.mean_sd)},
                       {"cosine_min", format::number(w.cos_min)},
                       {"cosine_mean", format::number(w.cos_mean)},
                       {"cosine_max", format::number(w.cos_max)}});
  return {{"study", format::run(a.study, false, a.liveness)},
          {"metric", a.metric},
          {"planned", a.planned},
          {"finished", a.finished},
          {"cells", cells},
          {"comparison", stats::comparison_json(a.comparison)},
          {"energy_kwh", format::number(a.energy_kwh)},
          {"co2_kg", format::number(a.co2_kg)},
          {"carbon_kg_per_kwh", format::number(a.carbon_kg_per_kwh)},
          {"determinism_cost", format::optional(a.determinism_cost)},
          {"weights", weights},
          {"pair_comparisons", pair_comparisons_json(a)},
          {"factor_components", factor_components_json(a)},
          {"factor_notes", a.factor_notes},
          {"notes", a.notes}};
}

}  // namespace trainscope::study
