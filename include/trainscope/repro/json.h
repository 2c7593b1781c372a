// JSON of a run diff (`trainscope diff --json`, the API) and of the
// reproducibility checklist. Pure functions: they hold nothing and may run
// on any thread.
#pragma once

#include <vector>

#include "trainscope/format/format.h"
#include "trainscope/repro/diff.h"
#include "trainscope/repro/documents.h"

namespace trainscope::repro {

// The RunDiff's fields, its tensor deltas as [{tensor, elements,
// differing, max_abs, max_rel, max_ulp}], its config and environment
// differences.
format::Json run_diff_json(const RunDiff& d);
// [{item, answer, answered}].
format::Json checklist_json(const std::vector<ChecklistItem>& items);

}  // namespace trainscope::repro
