// Hardware iteration of the logistic map, compiled with -ffp-contract=off so
// that every operation rounds as written; FMA happens only where std::fma is
// called explicitly. Private to the numerics component.
#pragma once

#include <cstdint>
#include <vector>

#include "trainscope/numerics/logmap.h"

namespace trainscope::numerics::kernels {

// Trajectories are returned in binary128, which holds every float, double
// and x87 long double value exactly.
using Trajectory = std::vector<__float128>;
Trajectory iterate_f32(float x0, float r, Order order, bool fma, int64_t steps);
Trajectory iterate_f32_wide(float x0, float r, Order order, bool fma, int64_t steps);
Trajectory iterate_f64(double x0, double r, Order order, bool fma, int64_t steps);
Trajectory iterate_f80(long double x0, long double r, Order order, int64_t steps);
Trajectory iterate_f128(__float128 x0, __float128 r, Order order, int64_t steps);

}  // namespace trainscope::numerics::kernels
