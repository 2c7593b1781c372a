// Test predictions as a unit of any run.
#include "trainscope/predictions/observer.h"

#include "trainscope/instrument/unit.h"

namespace trainscope::predictions {

void PredictionsObserver::on_evaluation_end(const instrument::RunContext&,
                                            const instrument::Evaluation& e) {
  if (e.split != "test") return;
  last_.labels = e.result.labels;
  last_.predicted = e.result.predicted;
  last_.top_logit = e.result.top_logit;
}

void PredictionsObserver::on_train_end(const instrument::RunContext& ctx,
                                       const instrument::TrainResult& result) {
  if (result.status != store::RunStatus::kFinished || last_.labels.empty()) return;
  ctx.run.write_artifact(kPredictionsArtifact, kPredictionsKind,
                         [&](std::ostream& out) { write_predictions(out, last_); });
}

TRAINSCOPE_UNIT(predictions,
                instrument::Unit{.name = "predictions",
                                 .observers = [](const config::Config&) -> instrument::Observers {
                                   return {std::make_shared<PredictionsObserver>()};
                                 }});

}  // namespace trainscope::predictions
