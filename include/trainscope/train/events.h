// The training events live in the instrument component
// (trainscope/instrument/events.h); these names keep code written against
// train::TrainObserver working.
#pragma once

#include "trainscope/instrument/events.h"

namespace trainscope::train {

using instrument::CheckpointInfo;
using instrument::EpochInfo;
using instrument::EvalResult;
using instrument::Evaluation;
using instrument::RunContext;
using instrument::Source;
using instrument::Step;
using instrument::StepPhase;
using instrument::to_string;
using instrument::TrainObserver;
using instrument::TrainPosition;
using instrument::TrainResult;

}  // namespace trainscope::train
