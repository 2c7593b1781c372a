// JSON of tune's report (tune/json.h).
#include "trainscope/tune/json.h"

namespace trainscope::tune {

using format::Json;

Json tune_report_json(const TuneReport& rep) {
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

}  // namespace trainscope::tune
