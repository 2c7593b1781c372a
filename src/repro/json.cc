// JSON of a run diff and of the checklist (repro/json.h).
#include "trainscope/repro/json.h"

#include "trainscope/env/json.h"

namespace trainscope::repro {

using format::Json;

namespace {
// The value as JSON (a non-finite one as JSON writes it), null when absent.
Json optional_json(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
}  // namespace

Json run_diff_json(const RunDiff& d) {
  Json deltas = Json::array();
  for (const auto& x : d.deltas)
    deltas.push_back({{"tensor", x.name},
                      {"elements", x.elements},
                      {"differing", x.differing},
                      {"max_abs", x.max_abs},
                      {"max_rel", x.max_rel},
                      {"max_ulp", x.max_ulp}});
  return {{"a", d.a},
          {"b", d.b},
          {"same_model", d.same_model},
          {"have_fingerprints", d.have_fingerprints},
          {"bit_identical", d.identical},
          {"common_steps", d.common_steps},
          {"first_diff_step", d.first_diff_step},
          {"differing_tensors", d.differing_tensors},
          {"replay_from", d.replay_from ? Json(*d.replay_from) : Json()},
          {"replay_reproduced", d.replay_reproduced},
          {"deltas", deltas},
          {"max_loss_diff",  // null: no step both runs recorded
           d.loss_steps_compared ? format::number(d.max_loss_diff) : format::Json(nullptr)},
          {"final_accuracy_a", optional_json(d.final_accuracy_a)},
          {"final_accuracy_b", optional_json(d.final_accuracy_b)},
          {"config", env::differences_json(d.config)},
          {"environment", env::differences_json(d.environment)}};
}

Json checklist_json(const std::vector<ChecklistItem>& items) {
  Json arr = Json::array();
  for (const auto& i : items)
    arr.push_back({{"item", i.question}, {"answer", i.answer}, {"answered", i.answered}});
  return arr;
}

}  // namespace trainscope::repro
