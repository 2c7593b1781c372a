// The weight spread of a study's runs: the study component's libtorch half
// (src/study/torch/weights.cc, in libtrainscope_train), which reads the
// runs' checkpoints.
#pragma once

#include <vector>

#include "trainscope/store/store.h"
#include "trainscope/study/report.h"

namespace trainscope::study {

// The weight spread of every cell with >= 2 runs, at every checkpoint step
// its runs share.
std::vector<WeightSpread> weight_spread(store::Store& store, const StudyAnalysis& a);

}  // namespace trainscope::study
