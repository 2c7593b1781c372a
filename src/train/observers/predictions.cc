#include "trainscope/study/predictions.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "trainscope/core/util.h"
#include "trainscope/train/observers.h"

namespace fs = std::filesystem;

namespace trainscope::train {

void PredictionsObserver::on_evaluation_end(const RunContext&, const Evaluation& e) {
  if (e.split != "test") return;
  last_.labels = e.result.labels;
  last_.predicted = e.result.predicted;
  last_.top_logit = e.result.top_logit;
}

void PredictionsObserver::on_train_end(const RunContext& ctx, const TrainResult& result) {
  if (result.status != store::RunStatus::kFinished || last_.labels.empty()) return;
  ctx.run.write_artifact(study::kPredictionsArtifact, study::kPredictionsKind,
                         [&](std::ostream& out) { study::write_predictions(out, last_); });
}

}  // namespace trainscope::train
