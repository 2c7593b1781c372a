// Importing a run whole or not at all: what every import (tfevents,
// MLflow, Kineto traces) does with the run it makes.
#pragma once

#include <functional>

#include "trainscope/store/store.h"

namespace trainscope::store {

// store.import_run(run), then `fill` (what the run holds: tags, params,
// points, records, artifacts); a run `fill` throws for is deleted again, so
// that an import leaves a whole run or none (a deletion that fails is said
// as a warning), and the exception goes on.
void import_whole(Store& store, const RunInfo& run, const std::function<void()>& fill);

}  // namespace trainscope::store
