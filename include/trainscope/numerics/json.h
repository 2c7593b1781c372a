// JSON of the floating-point lab's results (`trainscope numerics`). Pure
// functions: they hold nothing and may run on any thread.
#pragma once

#include <string>

#include "trainscope/format/format.h"
#include "trainscope/numerics/logmap.h"

namespace trainscope::numerics {

// The result's reference and each variant by id; `r` must hold
// trajectories (as run_logmap's do).
format::Json logmap_json(const std::string& run_uuid, const LogmapOptions& o,
                         const LogmapResult& r);
// {run, n, exact, results: [{method, value, abs_error, ulp_error}]}.
format::Json sum_json(const std::string& run_uuid, const SumReport& r);

}  // namespace trainscope::numerics
