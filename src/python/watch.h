// A PyTorch model watched by trainscope's units: `trainscope._trainscope.Watch`,
// driven by python/trainscope/watch.py.
#pragma once

#include <pybind11/pybind11.h>

namespace trainscope::python {

void bind_watch(pybind11::module_& m);

}  // namespace trainscope::python
