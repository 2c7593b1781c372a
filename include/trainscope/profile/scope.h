// Layer scopes: how the profiler knows which layer an operator belongs to
// without changing any model's arithmetic.
//
// Built-in models run each named layer inside run_layer(), which sets a
// thread-local scope (the layer's stable dotted name) for the duration of its
// forward. Outside profiling this costs two pointer writes. When a layer
// recorder is installed, run_layer() also reports each layer's module and
// input/output shapes (for FLOPs and activation memory).
#pragma once

#include <torch/nn/modules/container/any.h>
#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

namespace trainscope::profile {

enum class Phase { kNone, kData, kForward, kLoss, kBackward, kZeroGrad, kUpdate, kRecording };
const char* to_string(Phase p);

// Sets the current layer name for this thread while alive. `name` must
// outlive the scope.
class LayerScope {
 public:
  explicit LayerScope(const std::string* name);
  ~LayerScope();
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;
  // The innermost layer of this thread, or nullptr.
  static const std::string* current();

 private:
  const std::string* prev_;
};

// Sets the current training phase for this thread while alive.
class PhaseScope {
 public:
  explicit PhaseScope(Phase p);
  ~PhaseScope();
  static Phase current();

 private:
  Phase prev_;
};

// Observes every run_layer() and run_function() call of this thread while
// installed. `module` is null for a functional layer, whose `type` is given
// (e.g. "Add"); for a module layer `type` is empty. `ins` are the inputs.
using LayerObserver = std::function<void(
    const std::string& name, const torch::nn::Module* module, const std::string& type,
    const std::vector<torch::Tensor>& ins, const torch::Tensor& out)>;
class LayerObserverScope {
 public:
  explicit LayerObserverScope(LayerObserver observer);
  ~LayerObserverScope();

 private:
  LayerObserver* prev_;
  LayerObserver observer_;
};

// Runs one named layer: scope, forward, observer.
torch::Tensor run_layer(const std::string& name, torch::nn::AnyModule& module, torch::Tensor x);
template <typename ModuleHolder>
torch::Tensor run_layer(const std::string& name, ModuleHolder& module, torch::Tensor x);

// Runs one named functional layer (no module: a residual add, a relu or a
// pooling called as a function) so that it is timed and described like a
// module layer of type `type`.
template <typename F>
torch::Tensor run_function(const std::string& name, const std::string& type,
                           const std::vector<torch::Tensor>& ins, F&& f);

namespace detail {
void notify(const std::string& name, const torch::nn::Module* m, const std::string& type,
            const std::vector<torch::Tensor>& ins, const torch::Tensor& out);
bool observing();
}  // namespace detail

template <typename F>
torch::Tensor run_function(const std::string& name, const std::string& type,
                           const std::vector<torch::Tensor>& ins, F&& f) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = f();
  }
  if (detail::observing()) detail::notify(name, nullptr, type, ins, out);
  return out;
}

template <typename ModuleHolder>
torch::Tensor run_layer(const std::string& name, ModuleHolder& module, torch::Tensor x) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = module->forward(x);
  }
  if (detail::observing()) detail::notify(name, module.get(), std::string(), {x}, out);
  return out;
}

}  // namespace trainscope::profile
