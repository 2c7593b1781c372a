// The logistic map through libtorch tensor ops (float32/float64 on CPU, and
// on CUDA when a CUDA build of libtorch and a GPU are present).
#pragma once

#include "trainscope/numerics/logmap.h"

namespace trainscope::numerics {

std::vector<Variant> torch_variants();
std::vector<double> iterate_torch(const Variant& v, const std::string& x0, const std::string& r,
                                  int64_t steps);

}  // namespace trainscope::numerics
