// The logistic map through libtorch tensor ops (float32/float64 on CPU, and
// on CUDA when a CUDA build of libtorch and a GPU are present).
#pragma once

#include "trainscope/numerics/logmap.h"

namespace trainscope::numerics {

// The libtorch variants of this machine: float32 and float64 on the CPU,
// and on CUDA when torch::cuda::is_available().
std::vector<Variant> torch_variants();
// One torch variant's trajectory x[0..steps] (widened to double), one
// tensor operation per arithmetic operation on v.device; throws what
// libtorch throws (c10::Error) for a device it cannot use.
std::vector<double> iterate_torch(const Variant& v, const std::string& x0, const std::string& r,
                                  int64_t steps);

}  // namespace trainscope::numerics
