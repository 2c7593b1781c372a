// JSON of the floating-point lab's results (numerics/json.h).
#include "trainscope/numerics/json.h"

#include "trainscope/core/util.h"

namespace trainscope::numerics {

using format::Json;

Json logmap_json(const std::string& run_uuid, const LogmapOptions& o, const LogmapResult& res) {
  Json j = {{"run", run_uuid},
            {"reference_precision_bits", res.reference_precision},
            {"reference_final", res.reference.back()},
            {"lyapunov", res.lyapunov},
            {"predicted_digits_lost_per_step", res.predicted_digits_per_step}};
  for (const auto& v : res.variants) {
    Json over = Json::object();
    for (size_t i = 0; i < o.thresholds.size(); ++i)
      over[core::format_double(o.thresholds[i])] =
          v.first_over[i] >= 0 ? Json(v.first_over[i]) : Json();  // null: never
    j["variants"][v.variant.id] = {
        {"name", v.variant.name},
        {"x_final", format::number(v.x.back())},
        {"first_over", over},
        {"digits_gone_step", v.digits_gone >= 0 ? Json(v.digits_gone) : Json()},
        {"digits_lost_per_step", v.digits_lost_per_step},
        {"lyapunov_predicted_per_step", v.predicted_per_step},
        {"window", {v.window_from, v.window_to}}};
  }
  return j;
}

Json sum_json(const std::string& run_uuid, const SumReport& rep) {
  Json j = {{"run", run_uuid}, {"n", rep.n}, {"exact", rep.exact}};
  for (const auto& r : rep.results)
    j["results"].push_back({{"method", r.method},
                            {"value", r.value},
                            {"abs_error", r.abs_error},
                            {"ulp_error", r.ulp_error}});
  return j;
}

}  // namespace trainscope::numerics
