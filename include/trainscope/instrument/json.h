// JSON of what a training and an evaluation reached (`trainscope train
// --json`, `trainscope eval --json`). Pure functions: they hold nothing and
// may run on any thread.
#pragma once

#include <string>

#include "trainscope/format/format.h"
#include "trainscope/instrument/results.h"

namespace trainscope::instrument {

// What a training reached: its test accuracy null when it was not
// evaluated (a run stopped before an epoch ended).
format::Json train_result_json(const TrainResult& r);
// A checkpoint's evaluation.
format::Json evaluation_json(const std::string& run_uuid, const std::string& checkpoint,
                             const EvalResult& r);

}  // namespace trainscope::instrument
