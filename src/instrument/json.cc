// JSON of what a training and an evaluation reached (instrument/json.h).
#include "trainscope/instrument/json.h"

namespace trainscope::instrument {

using format::Json;

Json train_result_json(const TrainResult& r) {
  return {{"run", r.run_uuid},
          {"status", store::to_string(r.status)},
          {"steps", r.steps},
          {"epochs", r.epochs_completed},
          {"test_accuracy", r.tested ? Json(r.test.accuracy) : Json(nullptr)},
          {"seconds", r.seconds}};
}

Json evaluation_json(const std::string& run_uuid, const std::string& checkpoint,
                     const EvalResult& r) {
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

}  // namespace trainscope::instrument
