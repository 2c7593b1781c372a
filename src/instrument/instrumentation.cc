// The instruments of one run, driven by any event source.
#include "trainscope/instrument/instrumentation.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <typeinfo>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"

namespace trainscope::instrument {

const char* to_string(StepPhase p) {
  static constexpr const char* kNames[] = {"data",     "zero_grad", "forward",  "loss",
                                           "backward", "update",    "recording"};
  return kNames[static_cast<int>(p)];
}

Observers unit_observers(const Config& config, const Source& source) {
  Observers out;
  for (const auto& u : units()) {
    if (!u.observers) continue;
    if (source.records_own_metrics() && !u.with_own_metrics) continue;
    for (auto& o : u.observers(config)) out.push_back(std::move(o));
  }
  return out;
}

Instrumentation::Instrumentation(const Config& config, store::RunRecorder& run, Source& source,
                                 const TrainPosition& position, Observers observers, Observers last)
    : observers_(unit_observers(config, source)),
      ctx_(config, run, source, position, [this](const CheckpointInfo& c) { checkpoint(c); }),
      check_(observer_check_enabled()) {
  observers_.insert(observers_.end(), observers.begin(), observers.end());
  observers_.insert(observers_.end(), last.begin(), last.end());
}

void Instrumentation::run_failed(const TrainResult& result) {
  for (const auto& o : observers_) {
    try {
      o->on_run_end(ctx_, result);
    } catch (const std::exception& e) {
      core::log_warn("while ending the failed run: {}", e.what());
    }
  }
}

namespace {

// -1: not decided yet (the environment, then the build, decide).
std::atomic<int> g_observer_check{-1};

// An observer's class, as its source names it ("trainscope::probes::ProbeObserver").
std::string class_name(const TrainObserver& o) {
  const char* mangled = typeid(o).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}

}  // namespace

bool observer_check_enabled() {
  int on = g_observer_check.load();
  if (on >= 0) return on != 0;
  const char* env = std::getenv("TRAINSCOPE_CHECK_OBSERVERS");
#ifdef NDEBUG
  on = env && std::strcmp(env, "1") == 0 ? 1 : 0;
#else
  on = env && std::strcmp(env, "0") == 0 ? 0 : 1;
#endif
  int undecided = -1;
  g_observer_check.compare_exchange_strong(undecided, on);
  return g_observer_check.load() != 0;
}

void set_observer_check(bool on) { g_observer_check = on ? 1 : 0; }

std::vector<Instrumentation::Mark> Instrumentation::marks() const {
  std::vector<Mark> out;
  for (const auto& p : ctx_.model.parameters()) {
    Mark m{p.unsafeGetTensorImpl(), p._version()};
    if (const auto& g = p.grad(); g.defined()) {
      m.grad = g.unsafeGetTensorImpl();
      m.grad_version = g._version();
    }
    out.push_back(m);
  }
  return out;
}

void Instrumentation::check_unwritten(const std::vector<Mark>& before,
                                      const TrainObserver& observer, const char* event) const {
  const std::vector<Mark> after = marks();
  std::string what;
  if (after.size() != before.size()) what = "the model's parameters (added or removed one)";
  for (size_t i = 0; what.empty() && i < after.size(); ++i) {
    const Mark &b = before[i], &a = after[i];
    const bool param = a.param != b.param || a.param_version != b.param_version;
    if (!param && a.grad == b.grad && a.grad_version == b.grad_version) continue;
    auto names = ctx_.model.named_parameters();
    const std::string name = i < names.size() ? names[i].key() : std::to_string(i);
    what = param ? "parameter " + name : "the gradient of " + name;
  }
  if (what.empty()) return;
  core::fail(core::ErrorKind::kRuntime,
             "observer {} wrote {} in {}: observers only read (instrument/events.h); what changes "
             "the training belongs in the loop or its gradient sync (instrument/gradient_sync.h)",
             class_name(observer), what, event);
}

}  // namespace trainscope::instrument
