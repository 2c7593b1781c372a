#include "trainscope/layers/layers.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "layers_internal.h"

namespace trainscope::layers {

struct Subscription::Entry {
  LayerSubscriber* subscriber;
  // Cleared when the subscription ends, so that a backward hook armed
  // earlier skips it.
  std::atomic<bool> alive{true};
};

namespace {

using Entries = std::vector<std::shared_ptr<Subscription::Entry>>;

thread_local const std::string* t_layer = nullptr;
thread_local Entries* t_entries = nullptr;  // null: no subscriber on this thread

void arm_backward(const std::string& name, const torch::Tensor& out) {
  if (!out.defined() || !out.requires_grad()) return;
  auto wanting = std::make_shared<Entries>();
  for (const auto& e : *t_entries)
    if (e->subscriber->wants_backward()) wanting->push_back(e);
  if (wanting->empty()) return;
  // The hook outlives this call: it holds its own copy of the name and the
  // entries it serves.
  out.register_hook([wanting, layer = name](const torch::Tensor& grad) {
    const BackwardEvent event{layer, grad};
    for (const auto& e : *wanting)
      if (e->alive) e->subscriber->on_backward(event);
  });
}

}  // namespace

const std::string* current_layer() { return t_layer; }

LayerScope::LayerScope(const std::string* name) : prev_(t_layer) { t_layer = name; }
LayerScope::~LayerScope() { t_layer = prev_; }

Subscription::Subscription(LayerSubscriber& subscriber)
    : entry_(std::make_shared<Entry>(&subscriber)) {
  if (!t_entries) t_entries = new Entries;
  t_entries->push_back(entry_);
  detail::update_callback();
}

Subscription::~Subscription() {
  entry_->alive = false;
  if (!t_entries) return;
  std::erase(*t_entries, entry_);
  if (t_entries->empty()) {
    delete t_entries;
    t_entries = nullptr;
    detail::update_callback();
  }
}

namespace detail {

bool subscribed() { return t_entries != nullptr; }

const std::string* swap_layer(const std::string* name) { return std::exchange(t_layer, name); }

void publish(const std::string& name, const torch::nn::Module* module, const std::string& type,
             const std::vector<torch::Tensor>& ins, const torch::Tensor& out) {
  const ForwardEvent event{name, module, type, ins, out};
  // A subscriber may end its own subscription while called: iterate a copy.
  const Entries entries = *t_entries;
  for (const auto& e : entries)
    if (e->alive) e->subscriber->on_forward(event);
  if (t_entries) arm_backward(name, out);
}

}  // namespace detail

torch::Tensor run_layer(const std::string& name, torch::nn::AnyModule& module, torch::Tensor x) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = module.forward(x);
  }
  if (detail::subscribed()) detail::publish(name, module.ptr().get(), std::string(), {x}, out);
  return out;
}

}  // namespace trainscope::layers
