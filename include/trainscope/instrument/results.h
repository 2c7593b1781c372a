// What an evaluation and a training came to: plain values, without
// libtorch, so that readers and printers (format/) can take them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::instrument {

// One evaluation of a model on a split: the mean loss and the accuracy
// over `samples` examples, the macro-averaged F1, and per-class and
// per-example detail. A plain value.
struct EvalResult {
  int64_t samples = 0;
  double loss = 0;
  double accuracy = 0;
  double macro_f1 = 0;
  double top5 = -1;     // -1 when there are <= 5 classes
  double roc_auc = -1;  // two-class problems only
  std::vector<double> per_class_accuracy;
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted]
  // Per example, in the split's order: the true class, the predicted class
  // and its logit (what studies compare across runs).
  std::vector<int32_t> labels, predicted;
  std::vector<float> top_logit;
};

// What a training came to (Trainer::run, Run::end): its run, final status,
// optimizer steps and epochs done, the last test evaluation, and its wall
// time in this process. A plain value.
struct TrainResult {
  std::string run_uuid;
  store::RunStatus status = store::RunStatus::kFinished;
  int64_t steps = 0;
  int64_t epochs_completed = 0;
  EvalResult test;
  // Whether `test` holds an evaluation: a run stopped (or resumed and
  // stopped again) before an epoch ended in this process has none.
  bool tested = false;
  double seconds = 0;
};

}  // namespace trainscope::instrument
