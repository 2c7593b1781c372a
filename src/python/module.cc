// trainscope's Python module, `trainscope._trainscope`: a thin binding of
// the C++ libraries that python/trainscope/ wraps (the package users
// import). Built against the torch package's libtorch and pybind11, with torch._C's
// ABI, so that it shares libtorch's types with `import torch`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>
#include <torch/csrc/utils/pybind.h>  // torch.Tensor <-> at::Tensor, without a copy

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inputs.h"
#include "run.h"
#include "trainscope/config/config.h"
#include "trainscope/config/seeds.h"
#include "trainscope/core/log.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/train/torch_env.h"
#include "watch.h"

namespace py = pybind11;
namespace ts = trainscope;
using ts::python::PyRun;
using ts::python::RunArgs;

namespace {

// core::Error kinds as Python exceptions: a bad argument is a ValueError,
// what is missing a LookupError, the rest trainscope.Error.
void register_errors(py::module_& m) {
  // Stored once, while the GIL is held (pybind11's recipe for a module's
  // own exception type); the translator runs with the GIL held too.
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> error;
  error.call_once_and_store_result([&]() { return py::exception<ts::core::Error>(m, "Error"); });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ts::core::Error& e) {
      // As the CLI prints it: a value's ESC or CR (a store's, an
      // argument's) never reaches a traceback raw.
      const std::string what = ts::core::terminal_text(e.what());
      switch (e.kind()) {
        case ts::core::ErrorKind::kUsage:
          PyErr_SetString(PyExc_ValueError, what.c_str());
          return;
        case ts::core::ErrorKind::kNotFound:
          PyErr_SetString(PyExc_LookupError, what.c_str());
          return;
        default:
          py::set_error(error.get_stored(), what.c_str());
      }
    }
  });
}

// A script's trainscope settings ("seeds.master=3", "compute.threads=2",
// "determinism.mkldnn=false") checked and applied as the trainer applies
// them (threads of libtorch and its BLAS, determinism); returns the named
// streams' seeds as the trainer derives them, and the master seed.
std::map<std::string, uint64_t> apply_settings(const std::vector<std::string>& sets, bool apply) {
  const ts::config::Config c = ts::config::parse_config("", sets, "the script's settings");
  if (apply) ts::train::apply_determinism(c);
  const ts::config::StreamSeeds s = ts::config::derive_seeds(c);
  return {{"master", static_cast<uint64_t>(c.seeds.master)},
          {"init", s.init},
          {"data_order", s.data_order},
          {"augment", s.augment},
          {"dropout", s.dropout}};
}

// One setting of trainscope's own sections ("seeds.master=1000"), read by
// the trainer's rule (a Python int() would take 1_000, +2 or a fullwidth
// digit, which the trainer refuses): its value as the resolved config
// writes it ("1000"), or the Error naming the setting.
std::string own_setting(const std::string& line) {
  const std::string key = line.substr(0, line.find('='));
  const auto flat =
      ts::config::flatten(ts::config::parse_config("", {line}, "the script's settings"));
  const auto it = flat.find(key);
  return it != flat.end() ? it->second : line.substr(std::min(line.size(), key.size() + 1));
}

}  // namespace

PYBIND11_MODULE(_trainscope, m) {
  m.doc() = "trainscope's C++ libraries for Python (use the trainscope package)";
  register_errors(m);
  // Units built outside trainscope ($TRAINSCOPE_UNITS), as the CLI loads
  // them: a Python run attaches every registered unit.
  (void)ts::instrument::load_units_from_environment();
  py::class_<RunArgs>(m, "RunArgs")
      .def(py::init<>())
      .def_readwrite("store", &RunArgs::store)
      .def_readwrite("experiment", &RunArgs::experiment)
      .def_readwrite("name", &RunArgs::name)
      .def_readwrite("parent", &RunArgs::parent)
      .def_readwrite("command_line", &RunArgs::command_line)
      .def_readwrite("default_name", &RunArgs::default_name)
      .def_readwrite("script", &RunArgs::script)
      .def_readwrite("params", &RunArgs::params)
      .def_readwrite("tags", &RunArgs::tags)
      .def_readwrite("environment", &RunArgs::environment)
      .def_readwrite("user_environment", &RunArgs::user_environment)
      .def_readwrite("record_environment", &RunArgs::record_environment);
  py::class_<PyRun>(m, "Run")
      .def(py::init<const RunArgs&>())
      .def_property_readonly("uuid", &PyRun::uuid)
      .def_property_readonly("name", &PyRun::name)
      .def_property_readonly("store", &PyRun::store)
      .def_property_readonly("ended", &PyRun::ended)
      .def("log_metrics", &PyRun::log_metrics)
      .def("set_params", &PyRun::set_params)
      .def("set_tags", &PyRun::set_tags)
      .def("add_artifact", &PyRun::add_artifact)
      .def("end", &PyRun::end)
      .def("end_at_exit", &PyRun::end_at_exit);
  ts::python::bind_watch(m);
  ts::python::bind_inputs(m);
  m.def("apply_settings", &apply_settings, py::arg("sets"), py::arg("apply") = true,
        "Checks (and applies) seeds./compute./determinism. settings; the streams' seeds");
  m.def("own_setting", &own_setting, py::arg("line"),
        "A setting of seeds./compute./determinism. checked; its value as the config writes it");
  m.def(
      "param_key_problem", [](const std::string& key) { return ts::store::param_key_problem(key); },
      py::arg("key"),
      "What the rule of a run's params refuses in `key` (\"param 'a' holds ...\"), or None");
  m.def("default_store", &ts::store::default_store_uri,
        "The store a run goes to when none is given: $TRAINSCOPE_STORE, else ./trainscope.db");
}
