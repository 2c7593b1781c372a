// JSON of `trainscope tune`'s report. A pure function: it holds nothing
// and may run on any thread.
#pragma once

#include "trainscope/format/format.h"
#include "trainscope/tune/tune.h"

namespace trainscope::tune {

// Each setting's step times and numbers, the fastest, the layers of the
// baseline and the fastest.
format::Json tune_report_json(const TuneReport& rep);

}  // namespace trainscope::tune
