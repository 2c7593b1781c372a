// Test predictions as a unit of any run: the last test evaluation's class
// and top logit per example, written as the artifact predictions/test.bin
// (predictions.h) when the run finishes, for studies' measures across runs.
// Every run gets it (it needs only on_evaluation_end of split "test").
#pragma once

#include "trainscope/instrument/events.h"
#include "trainscope/predictions/predictions.h"

namespace trainscope::predictions {

// The predictions unit's observer (see the file comment): keeps the last
// "test" evaluation's predictions (a copy) and writes them at train end
// when the run finished; nothing for a stopped run. Training thread.
class PredictionsObserver : public instrument::TrainObserver {
 public:
  void on_evaluation_end(const instrument::RunContext& ctx,
                         const instrument::Evaluation& evaluation) override;
  void on_train_end(const instrument::RunContext& ctx,
                    const instrument::TrainResult& result) override;

 private:
  Predictions last_;
};

}  // namespace trainscope::predictions
