#include "trainscope/profile/scope.h"

namespace trainscope::profile {
namespace {
thread_local const std::string* t_layer = nullptr;
thread_local Phase t_phase = Phase::kNone;
thread_local LayerObserver* t_observer = nullptr;
}  // namespace

const char* to_string(Phase p) {
  switch (p) {
    case Phase::kNone:
      return "none";
    case Phase::kData:
      return "data";
    case Phase::kForward:
      return "forward";
    case Phase::kLoss:
      return "loss";
    case Phase::kBackward:
      return "backward";
    case Phase::kZeroGrad:
      return "zero_grad";
    case Phase::kUpdate:
      return "update";
    case Phase::kRecording:
      return "recording";
  }
  return "?";
}

LayerScope::LayerScope(const std::string* name) : prev_(t_layer) { t_layer = name; }
LayerScope::~LayerScope() { t_layer = prev_; }
const std::string* LayerScope::current() { return t_layer; }

PhaseScope::PhaseScope(Phase p) : prev_(t_phase) { t_phase = p; }
PhaseScope::~PhaseScope() { t_phase = prev_; }
Phase PhaseScope::current() { return t_phase; }

LayerObserverScope::LayerObserverScope(LayerObserver observer)
    : prev_(t_observer), observer_(std::move(observer)) {
  t_observer = &observer_;
}
LayerObserverScope::~LayerObserverScope() { t_observer = prev_; }

namespace detail {
void notify(const std::string& name, const torch::nn::Module* m, const std::string& type,
            const std::vector<torch::Tensor>& ins, const torch::Tensor& out) {
  if (t_observer) (*t_observer)(name, m, type, ins, out);
}
bool observing() { return t_observer != nullptr; }
}  // namespace detail

torch::Tensor run_layer(const std::string& name, torch::nn::AnyModule& module, torch::Tensor x) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = module.forward(x);
  }
  if (t_observer) (*t_observer)(name, module.ptr().get(), std::string(), {x}, out);
  return out;
}

}  // namespace trainscope::profile
