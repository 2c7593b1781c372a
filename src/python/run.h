// The run of a Python script as the module binds it (module.cc) and the
// profiler records into it (profile.cc).
#pragma once

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <torch/types.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "at_exit.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/env/torch.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::python {

namespace py = pybind11;
namespace ts = trainscope;

// What the package passes for a run, as the script gave it (empty: not
// given): who the run is with the environment's added is decided here by
// instrument::resolve_identity, as for every run (a study's planned child
// included).
struct RunArgs {
  std::string store, experiment, name, parent, command_line;
  std::string default_name;  // the script's name: "x-2" when "x" is taken
  std::string script;        // the script's path: its git repository is recorded
  // The package's environment entries (python.*), and the script's own
  // (start_run(environment=...)), which env::user_entry_problem checks.
  std::map<std::string, std::string> params, tags, environment, user_environment;
  bool record_environment = true;
};

// What a run accepts is the rule of every entry point (store/accept.h); a
// refusal is a ValueError naming the key or step, before anything of the
// call is recorded.
inline void refuse(const std::optional<std::string>& why) {
  if (why) ts::core::fail(ts::core::ErrorKind::kUsage, "{}", *why);
}

inline void check_params(const std::map<std::string, std::string>& params) {
  for (const auto& [k, v] : params) {
    refuse(ts::store::param_key_problem(k));
    refuse(ts::store::param_value_problem(k, v));
  }
}

inline void check_tags(const std::map<std::string, std::string>& tags) {
  for (const auto& [k, v] : tags) {
    refuse(ts::store::tag_key_problem(k));
    refuse(ts::store::tag_value_problem(k, v));
  }
}

// A Python int in the step range, or nullopt (a bool is no step).
inline std::optional<int64_t> integer_step(PyObject* p) {
  if (!PyLong_Check(p) || PyBool_Check(p)) return std::nullopt;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
  if (overflow || PyErr_Occurred() || ts::store::step_problem(int64_t{v})) {
    PyErr_Clear();
    return std::nullopt;
  }
  return v;
}

// A value for a message: its repr; for an int too long for Python to write
// (sys.get_int_max_str_digits()) how many digits it has, and for an object
// whose repr fails, its type.
inline std::string repr_of(const py::handle& h) {
  try {
    return py::repr(h).cast<std::string>();
  } catch (const py::error_already_set&) {
    if (!PyLong_Check(h.ptr())) return "<a " + std::string(Py_TYPE(h.ptr())->tp_name) + ">";
    const auto bits = h.attr("bit_length")().cast<double>();
    return fmt::format("<an integer of about {:.0f} digits>", std::floor(bits * 0.30103) + 1);
  }
}

// A step as the package passes it: a Python int, a float holding an
// integer (a tensor or NumPy scalar already turned into one), or any other
// number (numbers.Number: Decimal, Fraction) whose value is an integer, as
// a float's may be: numbers are numbers whatever their type. Anything
// else, a bool and a number with a fraction included, is refused naming
// its repr (Decimal('107.5')).
inline int64_t step_of(const py::object& step) {
  PyObject* p = step.ptr();
  if (auto v = integer_step(p)) return *v;
  if (PyFloat_Check(p) && !ts::store::step_problem(PyFloat_AS_DOUBLE(p)))
    return static_cast<int64_t>(PyFloat_AS_DOUBLE(p));
  if (!PyLong_Check(p) && !PyFloat_Check(p) &&  // a bool is a PyLong
      py::isinstance(step, py::module_::import("numbers").attr("Number"))) {
    try {
      // int() cuts a fraction off (and fails for NaN, an infinity, a
      // complex): the number is a step only if it equals its cut.
      const py::int_ whole(step);
      if (step.equal(whole))
        if (auto v = integer_step(whole.ptr())) return *v;
    } catch (const py::error_already_set&) {
      // Not an integer: refused below, by its repr.
    }
  }
  ts::core::fail(ts::core::ErrorKind::kUsage, "{}",
                 ts::store::step_refusal(ts::store::shown_key(repr_of(step))));
}

// One run of a Python script: its store and recorder. Every method on the
// script's thread; the recorder writes on its own.
//
// A child of os.fork() inherits the object but not the recorder's writer
// thread, nor the store's: there it is foreign. Nothing of it is touched in
// the child (no end, no lease released, no thread joined: the join would
// wait forever); its destruction leaks the recorder and the store, and the
// parent, which still owns the run, goes on recording.
class PyRun final : public EndsAtExit {
 public:
  explicit PyRun(const RunArgs& a) : pid_(::getpid()) {
    check_params(a.params);
    check_tags(a.tags);
    for (const auto& [k, v] : a.user_environment) refuse(ts::env::user_entry_problem(k, v));
    ts::instrument::RunIdentity given;
    given.store = a.store;
    given.experiment = a.experiment;
    given.name = a.name;
    given.default_name = a.default_name;
    given.parent = a.parent;
    given.command_line = a.command_line;
    given.tags = a.tags;
    // A Python run's own tags, after the user's were checked (model.custom
    // is trainscope's: a model of the script's own, which it cannot rebuild).
    given.tags.emplace("source", "python");
    given.tags["model.custom"] = "true";
    if (a.record_environment) given.code_path = a.script;
    const ts::instrument::RunIdentity id =
        ts::instrument::resolve_identity(std::move(given), ts::instrument::read_run_environment());
    store_ = ts::store::Store::open({.uri = id.store});
    std::optional<ts::env::Manifest> m;
    if (a.record_environment) {
      m = ts::env::capture_machine();
      m->merge(ts::env::capture_torch());
    }
    if ((!a.environment.empty() || !a.user_environment.empty()) && !m) m.emplace();
    for (const auto& [k, v] : a.environment) (*m)[k] = v;
    for (const auto& [k, v] : a.user_environment) (*m)[k] = v;  // in groups of its own
    recorder_ = ts::instrument::start_run(store_, id, std::move(m));
    uuid_ = recorder_->uuid();
    name_ = recorder_->info().name;
    if (!a.params.empty()) recorder_->set_params(a.params);
    python::end_at_exit(static_cast<EndsAtExit*>(this));  // last: nothing throws after it
  }

  PyRun(const PyRun&) = delete;
  PyRun& operator=(const PyRun&) = delete;
  // Not ended: kept to the process's exit, which ends it (at_exit.h).
  ~PyRun() {
    forget_at_exit(this);
    if (!foreign()) {
      if (!ended_ && recorder_) python::end_at_exit(std::move(recorder_), store_);
      return;
    }
    // In a forked child: leaked on purpose, never destroyed here.
    (void)recorder_.release();
    (void)new std::shared_ptr<ts::store::Store>(std::move(store_));
  }

  // Whether this process is not the one that started the run (a child of
  // os.fork()).
  bool foreign() const { return ::getpid() != pid_; }

  const std::string& uuid() const { return uuid_; }
  const std::string& name() const { return name_; }
  std::string store() const { return store_->describe(); }

  // Metrics of one step; returns the step. A key or step the rule refuses,
  // a step before the last one a key was logged at included (the rule's
  // StepOrder, as watch's lines and imports keep it), is refused
  // (ValueError), nothing of the call recorded. Any double is a value, NaN
  // and +-Inf included (kept as they are, as every entry point keeps them).
  int64_t log_metrics(const std::map<std::string, double>& values, const py::object& step_arg) {
    live();
    const int64_t step = step_of(step_arg);
    for (const auto& [key, v] : values) {
      refuse(ts::store::metric_key_problem(key));
      refuse(ts::store::own_metric_problem(key));
      refuse(order_.problem(key, step));
    }
    for (const auto& [key, v] : values) {
      recorder_->log_metric(key, v, step);
      order_.take(key, step);
    }
    return step;
  }

  // A param is set once: the same value again (the same number written
  // otherwise) is nothing new, another is refused (ValueError, as every
  // refused value is; thirty-second hunt, B-D2).
  void set_params(const std::map<std::string, std::string>& p) {
    live();
    check_params(p);
    try {
      recorder_->set_params(p);
    } catch (const ts::core::Error& e) {
      if (e.kind() != ts::core::ErrorKind::kConflict) throw;
      refuse(std::string(e.what()));
    }
  }
  void set_tags(const std::map<std::string, std::string>& t) {
    live();
    check_tags(t);
    for (const auto& [k, v] : t) recorder_->set_tag(k, v);
  }
  std::string add_artifact(const std::filesystem::path& file, const std::string& kind,
                           const std::string& name) {
    if (auto own = ts::store::own_artifact_kind_problem(kind))
      ts::core::fail(ts::core::ErrorKind::kUsage, "{}", *own);
    live();
    return recorder_->add_artifact(file, kind, name).name;
  }

  // Ends the run with `status` (finished, failed, killed, stopped); the
  // buffered points are written first. A second end does nothing.
  // In a forked child it does nothing: the run is the parent's. A status
  // that ends nothing (created, running) is refused (ValueError) before
  // the run is touched: it goes on, and a later end ends it.
  void end(const std::string& status) {
    const ts::store::RunStatus s = ts::store::parse_run_status(status);
    if (!ts::store::is_terminal(s))
      ts::core::fail(ts::core::ErrorKind::kUsage,
                     "run status '{}' ends no run: a run ends finished, failed, killed or stopped",
                     ts::store::to_string(s));
    if (ended_ || foreign()) return;
    ended_ = true;
    py::gil_scoped_release release;  // the writer thread finishes
    recorder_->end(s);
  }
  // As the interpreter ends with no failure seen: the run is left to the
  // process's exit, which ends it with its exit status (at_exit.h), and
  // the exit's handler is made to run before the statics' destructors.
  void end_at_exit() { python::end_before_statics(); }
  void end_as_process_exits(ts::store::RunStatus status) override {
    if (ended_ || foreign()) return;
    ended_ = true;
    try {
      recorder_->end(status);
    } catch (const std::exception& e) {
      ts::core::log_warn("trainscope: ending run {} {}: {}", uuid_, ts::store::to_string(status),
                         e.what());
    }
  }
  bool ended() const { return ended_; }
  // What the other bindings record into (profile.cc); an Error once ended.
  ts::store::RunRecorder& recorder() {
    live();
    return *recorder_;
  }

 private:
  void live() const {
    if (foreign())
      ts::core::fail(ts::core::ErrorKind::kUsage,
                     "run {} was started by process {}, not this one ({}): a forked child "
                     "cannot record into it; start a run of its own",
                     ts::core::short_uuid(uuid()), pid_, ::getpid());
    if (ended_)
      ts::core::fail(ts::core::ErrorKind::kUsage,
                     "run {} has ended: nothing more can be recorded into it; start another run",
                     ts::core::short_uuid(uuid()));
  }

  pid_t pid_;  // the process that started the run
  std::string uuid_, name_;
  std::shared_ptr<ts::store::Store> store_;
  std::unique_ptr<ts::store::RunRecorder> recorder_;
  ts::store::StepOrder order_;  // each key's last step
  bool ended_ = false;
};

}  // namespace trainscope::python
