// Layer events for a model of the user's (layers.h, instrument()): its
// layers are recognised by the operators that take their weights, through
// a thread-local operator callback installed only while a subscriber or a
// Watch is active on the thread.
#include <ATen/record_function.h>
#include <torch/nn/module.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "layers_internal.h"
#include "trainscope/layers/layers.h"

namespace trainscope::layers {

namespace {

// The operators libtorch's modules with parameters run as their forward
// (Linear runs addmm, or matmul on its transposed weight).
bool module_operator(std::string_view op) {
  static const std::unordered_set<std::string_view> kOps = {"aten::linear",
                                                            "aten::addmm",
                                                            "aten::matmul",
                                                            "aten::bilinear",
                                                            "aten::conv1d",
                                                            "aten::conv2d",
                                                            "aten::conv3d",
                                                            "aten::conv_transpose1d",
                                                            "aten::conv_transpose2d",
                                                            "aten::conv_transpose3d",
                                                            "aten::batch_norm",
                                                            "aten::instance_norm",
                                                            "aten::layer_norm",
                                                            "aten::group_norm",
                                                            "aten::embedding",
                                                            "aten::embedding_bag",
                                                            "aten::prelu",
                                                            "aten::lstm",
                                                            "aten::gru",
                                                            "aten::rnn_tanh",
                                                            "aten::rnn_relu"};
  return kOps.count(op) > 0;
}

struct Layer {
  std::string name;  // its path in the model: "features.conv1"
  const torch::nn::Module* module;
};

// A parameter of an instrumented model: a weak reference, so that a model
// destroyed without uninstrument() names nothing (a later tensor at the
// same address is not its parameter), and the layer that owns it.
struct Param {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> tensor;
  std::shared_ptr<const Layer> layer;
};

// Every instrumented model's parameters, by tensor; replaced whole on each
// change so that a callback can read a snapshot without a lock.
using Params = std::vector<std::pair<const c10::TensorImpl*, Param>>;
struct Registry {
  std::unordered_map<const torch::nn::Module*, Params> models;
  std::unordered_map<const c10::TensorImpl*, Param> params;
};

std::mutex g_mu;
std::shared_ptr<const Registry> g_registry = std::make_shared<Registry>();  // guarded by g_mu
std::atomic<int> g_version{0};

thread_local std::shared_ptr<const Registry> t_registry;
thread_local int t_registry_version = -1;
thread_local int t_watches = 0;
thread_local at::CallbackHandle t_handle = 0;
thread_local int t_backward = 0;  // depth of backward functions on this thread

const Registry& registry() {
  if (t_registry_version != g_version.load(std::memory_order_acquire)) {
    std::lock_guard lock(g_mu);
    t_registry = g_registry;
    t_registry_version = g_version.load(std::memory_order_relaxed);
  }
  return *t_registry;
}

// What the end of an operator needs of its start.
struct Owned : at::ObserverContext {
  std::shared_ptr<const Layer> layer;  // null: a backward function
  const std::string* previous = nullptr;
  std::vector<torch::Tensor> inputs;
};

// The layer whose parameter `fn` takes, if it is one's forward operator.
std::shared_ptr<const Layer> owner(const at::RecordFunction& fn, const Registry& r,
                                   std::vector<torch::Tensor>& inputs) {
  std::shared_ptr<const Layer> found;
  auto param = [&](const at::TensorBase& t) -> const Param* {
    auto it = r.params.find(t.unsafeGetTensorImpl());
    return it == r.params.end() || it->second.tensor.expired() ? nullptr : &it->second;
  };
  auto look = [&](const torch::Tensor& t) {
    if (!t.defined()) return;
    const Param* p = param(t);
    // A view of a parameter (Linear's weight.t()) is the parameter.
    if (!p && t.is_view()) p = param(t._base());
    if (!p) {
      inputs.push_back(t);
    } else if (!found) {
      found = p->layer;
    }
  };
  for (const auto& v : fn.inputs()) {
    if (v.isTensor()) look(v.toTensor());
    if (v.isTensorList())
      for (const auto& t : v.toTensorList()) look(t);
  }
  return found;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ++t_backward;
    return std::make_unique<Owned>();
  }
  // Inside a named layer (run_layer, or an operator owned below), during
  // backward, or not a module's operator: nothing to do.
  if (current_layer() || t_backward > 0 || !module_operator(fn.name())) return nullptr;
  auto owned = std::make_unique<Owned>();
  owned->layer = owner(fn, registry(), owned->inputs);
  if (!owned->layer) return nullptr;
  owned->previous = detail::swap_layer(&owned->layer->name);
  return owned;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* owned = static_cast<Owned*>(ctx);
  if (!owned) return;
  if (!owned->layer) {
    --t_backward;
    return;
  }
  detail::swap_layer(owned->previous);
  if (!detail::subscribed() || fn.outputs().empty() || !fn.outputs()[0].isTensor()) return;
  detail::publish(owned->layer->name, owned->layer->module, std::string(), owned->inputs,
                  fn.outputs()[0].toTensor());
}

// Each parameter and buffer of `model` (BatchNorm's running statistics are
// its operator's inputs too) with the module that owns it.
Params params_of(torch::nn::Module& model) {
  Params out;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    auto params = item.value()->named_parameters(/*recurse=*/false);
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false))
      params.insert(b.key(), b.value());
    if (params.is_empty()) continue;
    auto layer = std::make_shared<const Layer>(
        Layer{item.key().empty() ? std::string("(model)") : item.key(), item.value().get()});
    for (const auto& p : params)
      out.emplace_back(p.value().unsafeGetTensorImpl(),
                       Param{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(
                                 p.value().getIntrusivePtr()),
                             layer});
  }
  return out;
}

void replace(torch::nn::Module* add, const torch::nn::Module* remove) {
  std::lock_guard lock(g_mu);
  auto next = std::make_shared<Registry>();
  for (const auto& [model, params] : g_registry->models)
    if (model != remove && model != add) next->models[model] = params;
  if (add) next->models[add] = params_of(*add);
  for (const auto& [model, params] : next->models)
    for (const auto& [impl, param] : params) next->params.insert_or_assign(impl, param);
  g_registry = std::move(next);
  g_version.fetch_add(1, std::memory_order_release);
}

}  // namespace

namespace detail {

void update_callback() {
  const bool wanted = (subscribed() || t_watches > 0) && !registry().models.empty();
  if (wanted && t_handle == 0) {
    t_handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(on_start, on_end)
            .needsInputs(true)
            .needsOutputs(true)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  } else if (!wanted && t_handle != 0) {
    at::removeCallback(t_handle);
    t_handle = 0;
    t_backward = 0;
  }
}

}  // namespace detail

void instrument(torch::nn::Module& model) {
  replace(&model, nullptr);
  detail::update_callback();
}

void uninstrument(torch::nn::Module& model) {
  replace(nullptr, &model);
  detail::update_callback();
}

namespace detail {
bool wanted() { return subscribed() || t_watches > 0; }
}  // namespace detail

Watch::Watch() {
  ++t_watches;
  detail::update_callback();
}

Watch::~Watch() {
  --t_watches;
  detail::update_callback();
}

}  // namespace trainscope::layers
