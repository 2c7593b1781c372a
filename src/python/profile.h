// The per-layer profiler for a Python model: `trainscope._trainscope.Profiler`,
// driven by python/trainscope/profile.py (module hooks name the layers,
// wrappers of the optimizer and of Tensor.backward mark the phases).
#pragma once

#include <pybind11/pybind11.h>

namespace trainscope::python {

void bind_profile(pybind11::module_& m);

}  // namespace trainscope::python
