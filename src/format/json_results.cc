// JSON of results computed from runs: profiles, the cost model's
// evaluation, the floating-point lab.
#include <algorithm>

#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::format {

Json profile(const std::string& run_uuid, const profile::ProfileSummary& s,
             const ProfileExtras& x) {
  Json layers = Json::array();
  for (const auto& l : s.layers)
    layers.push_back({{"layer", l.layer},
                      {"type", l.type},
                      {"forward_us", l.forward_us},
                      {"backward_us", l.backward_us},
                      {"update_us", l.update_us},
                      {"forward_flops", l.flops},
                      {"forward_gflops_per_s", gflops(l.flops, l.forward_us)}});
  return {{"run", run_uuid},
          {"profiled_iterations", s.iterations},
          {"wall_us", s.wall_us},
          {"coverage_min", s.coverage_min},
          {"coverage_mean", s.coverage_mean},
          {"categories_us", s.categories},
          {"step_ms_profiled", x.step_ms_profiled},
          {"step_ms_unprofiled", x.step_ms_unprofiled},
          {"peak_gflops", x.peak_gflops},
          {"layers", layers}};
}

Json operator_table(const std::string& run_uuid, const profile::OperatorTable& t, size_t top) {
  Json ops = Json::array();
  for (size_t i = 0; i < t.ops.size() && (top == 0 || i < top); ++i) {
    const auto& o = t.ops[i];
    ops.push_back(
        {{"name", o.name},
         {"calls", o.calls},
         {"self_us", o.self_us},
         {"self_percent", t.self_us > 0 ? o.self_us / t.self_us * 100 : 0.0},
         {"total_us", o.total_us},
         {"avg_us", o.total_us / static_cast<double>(o.calls)},
         {"self_us_per_step", o.self_us / static_cast<double>(std::max<int64_t>(1, t.steps))}});
  }
  return {{"run", run_uuid}, {"steps", t.steps}, {"self_us", t.self_us}, {"operators", ops}};
}

Json costmodel_eval(const profile::CostModelEval& e) {
  Json rows = Json::array(), lrows = Json::array();
  for (const auto& r : e.rows)
    rows.push_back({{"model", r.model},
                    {"batch", r.batch},
                    {"measured_ms", r.measured_us / 1000},
                    {"predicted_ms", r.predicted_us / 1000}});
  for (const auto& r : e.layer_rows)
    lrows.push_back({{"model", r.model},
                     {"batch", r.batch},
                     {"layer", r.layer},
                     {"type", r.type},
                     {"measured_us", r.measured_us},
                     {"predicted_us", r.predicted_us}});
  return {{"iteration_mape_percent", e.iteration_mape},
          {"layer_mape_percent", e.layer_mape},
          {"rows", rows},
          {"layers", lrows}};
}

Json logmap(const std::string& run_uuid, const numerics::LogmapOptions& o,
            const numerics::LogmapResult& res) {
  Json j = {{"run", run_uuid},
            {"reference_precision_bits", res.reference_precision},
            {"reference_final", res.reference.back()},
            {"lyapunov", res.lyapunov},
            {"predicted_digits_lost_per_step", res.predicted_digits_per_step}};
  for (const auto& v : res.variants) {
    Json over = Json::object();
    for (size_t i = 0; i < o.thresholds.size(); ++i)
      over[core::format_double(o.thresholds[i])] = v.first_over[i];
    j["variants"][v.variant.id] = {{"name", v.variant.name},
                                   {"x_final", number(v.x.back())},
                                   {"first_over", over},
                                   {"digits_gone_step", v.digits_gone},
                                   {"digits_lost_per_step", v.digits_lost_per_step},
                                   {"lyapunov_predicted_per_step", v.predicted_per_step},
                                   {"window", {v.window_from, v.window_to}}};
  }
  return j;
}

Json sum(const std::string& run_uuid, const numerics::SumReport& rep) {
  Json j = {{"run", run_uuid}, {"n", rep.n}, {"exact", rep.exact}};
  for (const auto& r : rep.results)
    j["results"].push_back({{"method", r.method},
                            {"value", r.value},
                            {"abs_error", r.abs_error},
                            {"ulp_error", r.ulp_error}});
  return j;
}

Json train_result(const instrument::TrainResult& r) {
  return {{"run", r.run_uuid},
          {"status", store::to_string(r.status)},
          {"steps", r.steps},
          {"epochs", r.epochs_completed},
          {"test_accuracy", r.tested ? Json(r.test.accuracy) : Json(nullptr)},
          {"seconds", r.seconds}};
}

Json evaluation(const std::string& run_uuid, const std::string& checkpoint,
                const instrument::EvalResult& r) {
  Json j = {{"run", run_uuid},
            {"checkpoint", checkpoint},
            {"samples", r.samples},
            {"loss", r.loss},
            {"accuracy", r.accuracy},
            {"macro_f1", r.macro_f1},
            {"per_class_accuracy", r.per_class_accuracy},
            {"confusion", r.confusion}};
  if (r.top5 >= 0) j["top5"] = r.top5;
  if (r.roc_auc >= 0) j["roc_auc"] = r.roc_auc;
  return j;
}

Json tune_report(const tune::TuneReport& rep) {
  Json rows = Json::array(), layers = Json::array();
  for (const auto& r : rep.results)
    rows.push_back({{"setting", r.setting.label},
                    {"overrides", r.setting.overrides},
                    {"step_ms", r.step_ms},
                    {"median_step_ms", r.median_step_ms},
                    {"samples_per_s", r.samples_per_s},
                    {"peak_rss_mib", r.peak_rss_mib},
                    {"speedup", r.speedup},
                    {"same_numbers", r.same_numbers},
                    {"numbers", r.numerics}});
  for (const auto& l : rep.layers)
    layers.push_back({{"layer", l.layer},
                      {"type", l.type},
                      {"baseline_us", l.baseline_us},
                      {"fastest_us", l.best_us}});
  return {{"settings", rows},
          {"fastest", rep.results[rep.best].setting.label},
          {"layers", layers},
          {"seconds", rep.seconds}};
}

}  // namespace trainscope::format
