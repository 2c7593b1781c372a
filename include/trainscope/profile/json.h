// JSON and CSV of what profile measured: a run's per-layer profile, its
// operator table and the cost model's evaluation. Pure functions: they hold
// nothing and may run on any thread; the CSV writers leave a failed write
// in `out`'s state (nothing throws for it).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "trainscope/format/format.h"
#include "trainscope/profile/costmodel.h"
#include "trainscope/profile/report.h"

namespace trainscope::profile {

// A run's profile with the measured profiler overhead and the GEMM peak.
struct ProfileExtras {
  double step_ms_profiled = 0, step_ms_unprofiled = 0, peak_gflops = 0;
};
// {run, profiled_iterations, ...} with one object per layer (times in us,
// forward FLOPs and GFLOP/s) and the categories.
format::Json profile_json(const std::string& run_uuid, const ProfileSummary& s,
                          const ProfileExtras& extras);
// The first `top` operators (0: all) with self/total time, their shares and
// calls, per profiled step.
format::Json operator_table_json(const std::string& run_uuid, const OperatorTable& t, size_t top);
// The iteration rows (ms) and layer rows (us), with the MAPEs.
format::Json costmodel_eval_json(const CostModelEval& e);
// One row per layer (times in us, FLOPs, GFLOP/s), then one per category.
void profile_csv(std::ostream& out, const ProfileSummary& s);
// The first `top` operators (0: all) as operator_table_json has them.
void operator_table_csv(std::ostream& out, const OperatorTable& t, size_t top);
// "level,model,batch,layer,type,measured_us,predicted_us,error_percent":
// the iteration rows, then the layer rows.
void costmodel_eval_csv(std::ostream& out, const CostModelEval& e);

}  // namespace trainscope::profile
