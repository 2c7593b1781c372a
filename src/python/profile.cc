// The C++ profiler (profile/profiler.h) on a Python model: the same
// operator callbacks charge each operator's self time to (layer, phase);
// the layer is the one a module hook entered, the phase the one the package
// marked. Records as the profile unit does (profile::save_profiles).
#include "profile.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "run.h"
#include "trainscope/layers/layers.h"
#include "trainscope/profile/observer.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/profile/records.h"
#include "trainscope/profile/report.h"

namespace trainscope::python {

namespace {

using Owners = std::vector<std::pair<std::string, at::Tensor>>;
using States = std::vector<std::pair<at::Tensor, at::Tensor>>;

profile::Phase phase_named(const std::string& name) {
  using profile::Phase;
  for (Phase p : {Phase::kNone, Phase::kData, Phase::kForward, Phase::kLoss, Phase::kBackward,
                  Phase::kZeroGrad, Phase::kUpdate, Phase::kRecording})
    if (name == profile::to_string(p)) return p;
  core::fail(core::ErrorKind::kUsage,
             "no phase '{}': data, forward, loss, backward, zero_grad, update, recording, none",
             core::escape_for_display(name));
}

// Profiles the iterations a Python loop marks, one at a time, on the
// thread that calls it.
class PyProfiler {
 public:
  PyProfiler()
      : profiler_([this] { return owners_; }, /*keep_events=*/true, [this] { return states_; }) {}
  ~PyProfiler() { leave_all(); }

  // Starts profiling optimizer step `step`: `owners` names each parameter's
  // layer, `states` pairs a parameter with an optimizer state tensor.
  void begin(int64_t step, Owners owners, States states) {
    leave_all();
    owners_ = std::move(owners);
    states_ = std::move(states);
    profiler_.begin(step);
    owners_.clear();  // the profiler keeps storage addresses, not tensors
    states_.clear();
  }
  void phase(const std::string& name) {
    if (profiler_.active()) profiler_.phase(phase_named(name));
  }
  // A module's forward pass begins and ends (nested: a block's layers).
  void enter(const std::string& layer) {
    scopes_.push_back(std::make_unique<layers::LayerScope>(&*names_.insert(layer).first));
  }
  void leave() {
    if (!scopes_.empty()) scopes_.pop_back();
  }
  // Ends the iteration; returns its coverage (the share of its wall time
  // inside marked phases).
  double end() {
    leave_all();  // a forward pass that raised leaves its layers entered
    if (!profiler_.active()) return 0;
    profiles_.push_back(profiler_.end());
    return profiles_.back().coverage;
  }
  // Ends an iteration cut short without keeping it.
  void discard() {
    leave_all();
    if (profiler_.active()) profiler_.end();
  }
  bool active() const { return profiler_.active(); }
  size_t iterations() const { return profiles_.size(); }
  const std::vector<profile::IterationProfile>& profiles() const { return profiles_; }
  void clear() { profiles_.clear(); }

 private:
  void leave_all() {
    while (!scopes_.empty()) scopes_.pop_back();  // innermost first
  }

  std::set<std::string> names_;  // node-stable: the profiler keeps pointers
  std::vector<std::unique_ptr<layers::LayerScope>> scopes_;
  Owners owners_;
  States states_;
  profile::IterationProfiler profiler_;
  std::vector<profile::IterationProfile> profiles_;
};

template <typename T>
T get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

// One layer's facts from the package's dict (profile.py, layer_facts()).
profile::LayerInfo layer_info(const py::dict& d) {
  profile::LayerInfo li;
  li.name = d["name"].cast<std::string>();
  li.type = d["type"].cast<std::string>();
  li.in_shape = get<std::vector<int64_t>>(d, "in_shape", {});
  li.out_shape = get<std::vector<int64_t>>(d, "out_shape", {});
  li.params = get<int64_t>(d, "params", 0);
  li.param_tensors = get<int64_t>(d, "param_tensors", 0);
  li.param_bytes = get<double>(d, "param_bytes", 0);
  li.activation_bytes = get<double>(d, "activation_bytes", 0);
  li.bytes = get<double>(d, "in_bytes", 0) + li.activation_bytes + li.param_bytes;
  li.in_channels = get<int64_t>(d, "in_channels", 0);
  li.out_channels = get<int64_t>(d, "out_channels", 0);
  li.kernel = get<int64_t>(d, "kernel", 0);
  li.stride = get<int64_t>(d, "stride", 1);
  li.groups = get<int64_t>(d, "groups", 1);
  li.flops = profile::type_flops(li.type, li.in_shape, li.out_shape, li.in_channels,
                                 li.out_channels, get<int64_t>(d, "kernel_elems", 0), li.groups);
  return li;
}

// Records the profiled iterations and the layers' facts (forward order)
// into the run, as the profile unit does at the end of a C++ run.
void save_profile(PyRun& run, PyProfiler& profiler, const std::vector<py::dict>& layers) {
  store::RunRecorder& rec = run.recorder();
  if (!layers.empty()) {
    std::vector<profile::LayerInfo> infos;
    for (const auto& d : layers) infos.push_back(layer_info(d));
    profile::mark_input_gradients(infos);
    rec.log_record(profile::kLayersKind, profile::layers_record(profile::layers_to_json(infos)));
  }
  py::gil_scoped_release release;  // the GEMM peak may be measured
  profile::save_profiles(rec, profiler.profiles());
  profiler.clear();
}

}  // namespace

void bind_profile(py::module_& m) {
  py::class_<PyProfiler>(m, "Profiler")
      .def(py::init<>())
      .def("begin", &PyProfiler::begin)
      .def("phase", &PyProfiler::phase)
      .def("enter", &PyProfiler::enter)
      .def("leave", &PyProfiler::leave)
      .def("end", &PyProfiler::end)
      .def("discard", &PyProfiler::discard)
      .def_property_readonly("active", &PyProfiler::active)
      .def_property_readonly("iterations", &PyProfiler::iterations);
  m.def("save_profile", &save_profile,
        "Records a Profiler's iterations and the layers' facts into a run");
  m.def("layer_flops", &profile::type_flops,
        "Forward FLOPs of a layer of a type, from its shapes and structure");
}

}  // namespace trainscope::python
