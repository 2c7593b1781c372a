// JSON and CSV of a profile, its operator table and the cost model's
// evaluation (profile/json.h).
#include "trainscope/profile/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "trainscope/core/util.h"

namespace trainscope::profile {

using format::Json;

Json profile_json(const std::string& run_uuid, const ProfileSummary& s, const ProfileExtras& x) {
  Json layers = Json::array();
  for (const auto& l : s.layers)
    layers.push_back({{"layer", l.layer},
                      {"type", l.type},
                      {"forward_us", l.forward_us},
                      {"backward_us", l.backward_us},
                      {"update_us", l.update_us},
                      {"forward_flops", l.flops},
                      {"forward_gflops_per_s", format::gflops(l.flops, l.forward_us)}});
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

Json operator_table_json(const std::string& run_uuid, const OperatorTable& t, size_t top) {
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

Json costmodel_eval_json(const CostModelEval& e) {
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

void profile_csv(std::ostream& out, const ProfileSummary& s) {
  out << "layer,type,forward_us,backward_us,update_us,forward_flops,forward_gflops_per_s\n";
  for (const auto& l : s.layers)
    out << core::csv_field(l.layer) << "," << core::csv_field(l.type) << ","
        << core::format_double(l.forward_us) << "," << core::format_double(l.backward_us) << ","
        << core::format_double(l.update_us) << "," << core::format_double(l.flops) << ","
        << core::format_double(format::gflops(l.flops, l.forward_us)) << "\n";
  for (const auto& [k, v] : s.categories)
    out << core::csv_field(k) << ",,," << core::format_double(v) << ",,,\n";
}

void operator_table_csv(std::ostream& out, const OperatorTable& t, size_t top) {
  out << "name,calls,self_us,self_percent,total_us,avg_us,self_us_per_step\n";
  const double steps = static_cast<double>(std::max<int64_t>(1, t.steps));
  for (size_t i = 0; i < t.ops.size() && (top == 0 || i < top); ++i) {
    const auto& o = t.ops[i];
    out << core::csv_field(o.name) << "," << o.calls << "," << core::format_double(o.self_us) << ","
        << core::format_double(t.self_us > 0 ? o.self_us / t.self_us * 100 : 0.0) << ","
        << core::format_double(o.total_us) << ","
        << core::format_double(o.total_us / static_cast<double>(o.calls)) << ","
        << core::format_double(o.self_us / steps) << "\n";
  }
}

void costmodel_eval_csv(std::ostream& out, const CostModelEval& e) {
  out << "level,model,batch,layer,type,measured_us,predicted_us,error_percent\n";
  for (const auto& r : e.rows)
    out << fmt::format("iteration,{},{},,,{:.3f},{:.3f},{:.2f}\n", core::csv_field(r.model),
                       r.batch, r.measured_us, r.predicted_us,
                       (r.predicted_us / r.measured_us - 1) * 100);
  for (const auto& r : e.layer_rows)
    out << fmt::format("layer,{},{},{},{},{:.3f},{:.3f},{:.2f}\n", core::csv_field(r.model),
                       r.batch, core::csv_field(r.layer), core::csv_field(r.type), r.measured_us,
                       r.predicted_us, (r.predicted_us / r.measured_us - 1) * 100);
}

}  // namespace trainscope::profile
