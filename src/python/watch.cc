// A PyTorch model of the user's own, watched by the same units as any C++
// loop (fingerprint, profile, probes, monitor): the Python package is one
// more event source of an instrument::Instrumentation.
//
// The units read a libtorch module; the model is Python's. So the model is
// mirrored once: a tree of profile::DescribedModule with the Python model's
// own parameter and buffer tensors registered in it (the same tensors, not
// copies: the optimizer's in-place updates and the gradients are seen as
// they happen), each module saying its Python type and structure. Layer
// events come from the package's module hooks (enter/leave/publish), the
// phases and the step's events from its wrappers of the optimizer and of
// Tensor.backward; a forward pass a unit asks for (the layers' facts, the
// replay that finds where a NaN began) calls back into Python.
#include "watch.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "run.h"
#include "trainscope/config/config.h"
#include "trainscope/core/util.h"
#include "trainscope/instrument/instrumentation.h"
#include "trainscope/instrument/run.h"
#include "trainscope/layers/layers.h"
#include "trainscope/profile/profiler.h"

namespace trainscope::python {

namespace {

using Described = profile::DescribedModule;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

// One module of the Python model, as watch.py's mirror() lists them.
struct ModuleSpec {
  std::string path;  // "" for the root, "block.conv"
  Described::Structure structure;
  Tensors params, buffers;
};

ModuleSpec module_spec(const py::tuple& t) {
  ModuleSpec m;
  m.path = t[0].cast<std::string>();
  const py::dict s = t[1].cast<py::dict>();
  auto get = [&](const char* k, int64_t fallback) {
    return s.contains(k) ? s[k].cast<int64_t>() : fallback;
  };
  m.structure = {s["type"].cast<std::string>(),
                 get("in_channels", 0),
                 get("out_channels", 0),
                 get("kernel", 0),
                 get("kernel_elems", 0),
                 get("stride", 1),
                 get("groups", 1)};
  m.params = t[2].cast<Tensors>();
  m.buffers = t[3].cast<Tensors>();
  return m;
}

// The mirror of the model: modules by path, the root at "".
std::map<std::string, std::shared_ptr<Described>> mirror(const std::vector<py::tuple>& modules) {
  std::map<std::string, std::shared_ptr<Described>> out;
  for (const auto& t : modules) {
    ModuleSpec spec = module_spec(t);
    auto m = std::make_shared<Described>(spec.structure);
    for (auto& [name, p] : spec.params) m->register_parameter(name, p, p.requires_grad());
    for (auto& [name, b] : spec.buffers) m->register_buffer(name, b);
    const size_t dot = spec.path.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : spec.path.substr(0, dot);
    if (!spec.path.empty()) {
      auto it = out.find(parent);
      if (it == out.end())
        core::fail(core::ErrorKind::kUsage, "module '{}' comes before its parent '{}'", spec.path,
                   parent);
      it->second->register_module(dot == std::string::npos ? spec.path : spec.path.substr(dot + 1),
                                  m);
    }
    out.emplace(spec.path, std::move(m));
  }
  if (!out.count(""))
    core::fail(core::ErrorKind::kUsage, "the model's modules do not begin with the root");
  return out;
}

// What the units may ask of a Python loop: the mirrored model, its forward
// pass (Python's), the optimizer's state; no data of its own.
class PySource : public instrument::Source {
 public:
  PySource(std::shared_ptr<Described> model, std::string name, py::function forward,
           py::object state)
      : model_(std::move(model)),
        name_(std::move(name)),
        forward_(std::move(forward)),
        state_(std::move(state)) {}
  ~PySource() override {
    py::gil_scoped_acquire gil;
    forward_ = {};
    state_ = {};
  }

  torch::nn::Module& model() override { return *model_; }
  std::string model_name() const override { return name_; }
  torch::Tensor forward(const torch::Tensor& x) override {
    py::gil_scoped_acquire gil;
    return forward_(x, model_->is_training()).cast<at::Tensor>();
  }
  std::vector<std::pair<torch::Tensor, torch::Tensor>> optimizer_state() override {
    py::gil_scoped_acquire gil;
    if (state_.is_none()) return {};
    return state_().cast<std::vector<std::pair<at::Tensor, at::Tensor>>>();
  }
  // The script logs its loss and metrics itself (Run.log).
  bool records_own_metrics() const override { return true; }

 private:
  std::shared_ptr<Described> model_;
  std::string name_;
  py::function forward_;
  py::object state_;
};

instrument::StepPhase phase_named(const std::string& name) {
  using P = instrument::StepPhase;
  for (P p :
       {P::kData, P::kZeroGrad, P::kForward, P::kLoss, P::kBackward, P::kUpdate, P::kRecording})
    if (name == instrument::to_string(p)) return p;
  core::fail(core::ErrorKind::kUsage,
             "no phase '{}': data, zero_grad, forward, loss, backward, update, recording",
             core::escape_for_display(name));
}

}  // namespace

// The events of one watched model, raised by watch.py on the training thread.
class PyWatch {
 public:
  PyWatch(PyRun& run, const std::vector<std::string>& sets, const std::vector<py::tuple>& modules,
          const std::string& model_name, py::function forward, py::object state)
      : run_(run),
        config_((instrument::check_unit_settings(sets, "watch()"),
                 config::parse_config("", sets, "watch()"))),
        modules_(mirror(modules)),
        source_(modules_.at(""), model_name, std::move(forward), std::move(state)) {
    instrument::check_units(config_, source_);
    events_ = std::make_unique<instrument::Instrumentation>(config_, run_.recorder(), source_,
                                                            position_, instrument::Observers{},
                                                            instrument::Observers{});
    instrument::RunContext& ctx = events_->context();
    ctx.start_time = core::monotonic_now();
    events_->run_begin();
  }
  ~PyWatch() {
    if (run_.foreign()) {       // a forked child: the units' threads are the parent's
      (void)events_.release();  // leaked on purpose: ending them would join threads not here
      return;
    }
    if (!ended_) end("failed");
  }

  void batch_begin() {
    run_.recorder().check();  // a run deleted or taken over stops its loop
    step_ = instrument::Step{
        .epoch = position_.epoch, .batch = position_.batch, .number = position_.step + 1};
    events_->batch_begin();
  }
  // Whether a unit wants the layers named now (a profiled or probed step).
  bool layers_wanted() const { return layers::detail::wanted(); }
  void phase(const std::string& name) { events_->phase(phase_named(name)); }
  void enter(const std::string& layer) {
    scopes_.push_back(std::make_unique<layers::LayerScope>(&name(layer)));
  }
  void leave() {
    if (!scopes_.empty()) scopes_.pop_back();
  }
  // Layer `layer`, the module at `path` ("" for the root), returned `out`
  // from `ins`.
  void publish(const std::string& layer, const std::string& path,
               const std::vector<at::Tensor>& ins, const at::Tensor& out) {
    if (!layers::detail::subscribed()) return;
    layers::detail::publish(name(layer), modules_.at(path).get(), std::string(), ins, out);
  }
  void after_forward(const at::Tensor& inputs, const at::Tensor& output, const at::Tensor& loss) {
    step_.inputs = inputs, step_.output = output, step_.loss = loss;
    step_.samples = inputs.defined() && inputs.dim() > 0 ? inputs.size(0) : 0;
    events_->after_forward(step_);
  }
  void after_backward() { events_->after_backward(step_); }
  void after_step(double lr) {
    leave_all();
    step_.lr = lr;
    instrument::advance(position_, step_);
    events_->after_step(step_);
    events_->batch_end(step_);
    step_ = {};  // the step's tensors are not held beyond it
  }
  // Ends the watch: finished, stopped, killed or failed.
  // In a forked child it does nothing: the run and its units are the parent's.
  void end(const std::string& status) {
    if (ended_ || run_.foreign()) return;
    ended_ = true;
    leave_all();
    const store::RunStatus s = store::parse_run_status(status);
    instrument::TrainResult r{run_.uuid(), s, position_.step};
    if (s == store::RunStatus::kFailed || s == store::RunStatus::kKilled) {
      events_->run_failed(r);
      return;
    }
    events_->train_end(r);
    events_->run_end(r);
  }
  int64_t steps() const { return position_.step; }

 private:
  const std::string& name(const std::string& layer) { return *names_.insert(layer).first; }
  void leave_all() {
    while (!scopes_.empty()) scopes_.pop_back();  // innermost first
  }

  PyRun& run_;
  config::Config config_;
  std::map<std::string, std::shared_ptr<Described>> modules_;
  PySource source_;
  instrument::TrainPosition position_;
  std::unique_ptr<instrument::Instrumentation> events_;
  instrument::Step step_;
  std::set<std::string> names_;  // node-stable: events and scopes keep pointers
  std::vector<std::unique_ptr<layers::LayerScope>> scopes_;
  bool ended_ = false;
};

void bind_watch(py::module_& m) {
  py::class_<PyWatch>(m, "Watch")
      .def(py::init<PyRun&, const std::vector<std::string>&, const std::vector<py::tuple>&,
                    const std::string&, py::function, py::object>(),
           py::keep_alive<1, 2>())
      .def("batch_begin", &PyWatch::batch_begin)
      .def_property_readonly("layers_wanted", &PyWatch::layers_wanted)
      .def("phase", &PyWatch::phase)
      .def("enter", &PyWatch::enter)
      .def("leave", &PyWatch::leave)
      .def("publish", &PyWatch::publish)
      .def("after_forward", &PyWatch::after_forward)
      .def("after_backward", &PyWatch::after_backward)
      .def("after_step", &PyWatch::after_step)
      .def("end", &PyWatch::end)
      .def_property_readonly("steps", &PyWatch::steps);
}

}  // namespace trainscope::python
