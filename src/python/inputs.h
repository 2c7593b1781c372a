// What trainscope's trainer feeds a model for a config, for a loop written
// in Python: `trainscope._trainscope.TrainerInputs`.
#pragma once

#include <pybind11/pybind11.h>

namespace trainscope::python {

void bind_inputs(pybind11::module_& m);

}  // namespace trainscope::python
