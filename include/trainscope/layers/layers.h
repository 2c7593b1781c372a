// Named layers and the events they publish.
//
// A model names each layer by running it through run_layer() (a module) or
// run_function() (a functional step: a residual add, a relu, a pooling).
// While the layer runs, the thread's current layer (current_layer()) is its
// stable dotted name, so that a profiler can charge operators to it; after
// its forward pass the layer is published to every LayerSubscriber of the
// thread, and, when a subscriber wants it, the gradient of the loss with
// respect to the layer's output is published when backward reaches it.
//
// Any number of subscribers share these hooks (the profiler's layer
// description, the FLOP counter, probes), each called in subscription order.
// Without subscribers a layer costs two pointer writes and one check.
//
// A model of the user's that does not call run_layer() gets the same events
// with one line after it is built (libtorch's C++ modules have no forward
// hooks, so the layers are recognised by their operators instead):
//
//   trainscope::layers::instrument(*model);
//
// Caught: every module with parameters whose forward pass is one libtorch
// operator taking the module's own weight (or a view of it, or one of its
// buffers: BatchNorm's running statistics), as libtorch's
// modules do: Linear (its addmm, or its matmul: a bias added after a matmul
// on 3-D input is then outside the layer's output), Bilinear, Conv1d/2d/3d, ConvTranspose1d/2d/3d,
// BatchNorm1d/2d/3d, InstanceNorm, LayerNorm, GroupNorm, Embedding, EmbeddingBag, PReLU, LSTM, GRU,
// RNN. Each is named by its path in the model ("features.conv1") and published with its inputs and
// output, and gradients of its output reach subscribers that want them. Not caught: modules without
// parameters (ReLU, pooling, dropout, flatten) and code of the user's own that uses the weights
// through other operators (matmul, mul, ...): their time stays "unattributed" in a profile and they
// are not probed; name such a step with run_function() or run a module with run_layer() to have it
// counted. While neither a subscriber nor a Watch is active on a thread, an instrumented model
// costs nothing there; while one is, every operator of the thread passes an operator callback (the
// price of a profiled or probed step).
//
// Contract for subscribers: read the tensors, never modify them or the
// module (they are the model's own); a subscriber that keeps a tensor beyond
// the call must copy it (`t.detach().clone()`).
#pragma once

#include <torch/nn/modules/container/any.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace trainscope::layers {

// The innermost layer running on this thread, or nullptr. The pointee lives
// as long as the model that named it.
const std::string* current_layer();

// Makes `name` the current layer of this thread while alive. `name` must
// outlive the scope.
class LayerScope {
 public:
  // Sets this thread's current layer to `name` (nullptr: none) and restores
  // the previous one when destroyed: scopes nest, on one thread.
  explicit LayerScope(const std::string* name);
  ~LayerScope();  // restores the previous current layer
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  const std::string* prev_;
};

// One layer's forward pass, as it returns.
struct ForwardEvent {
  const std::string& name;
  const torch::nn::Module* module;  // null for a functional layer
  const std::string& type;          // a functional layer's type ("Add"); empty for a module
  const std::vector<torch::Tensor>& inputs;
  const torch::Tensor& output;
};

// The gradient of the loss with respect to one layer's output, during
// backward, on the thread that runs it.
struct BackwardEvent {
  const std::string& name;
  const torch::Tensor& grad_output;
};

// What a Subscription delivers (see the file comment's contract for
// subscribers). An exception thrown from a hook propagates into the
// model's forward or backward pass.
class LayerSubscriber {
 public:
  virtual ~LayerSubscriber() = default;
  // A layer's forward pass returned, on the subscribing thread; the event's
  // references are valid during the call only.
  virtual void on_forward(const ForwardEvent& event) {}
  // Backward reached the output of a layer whose forward this subscription
  // saw (when wants_backward()), on the thread that runs backward.
  virtual void on_backward(const BackwardEvent& event) {}
  // Whether on_backward is wanted. A hook on each layer's output is only
  // installed while some subscriber of the thread wants it.
  virtual bool wants_backward() const { return false; }
};

// Subscribes to the layers run on the calling thread while alive. The
// subscriber must outlive the subscription; gradients of a forward pass
// that was observed reach it only while the subscription is alive.
class Subscription {
 public:
  // Adds `subscriber` (by reference) after this thread's others; the
  // destructor removes it. Both on the same thread.
  explicit Subscription(LayerSubscriber& subscriber);
  ~Subscription();  // removes the subscriber; on the subscribing thread
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  struct Entry;

 private:
  std::shared_ptr<Entry> entry_;
};

// Makes the layers of `model` (see the file comment) publish events and
// be the current layer while their operator runs, from now on, on every
// thread. Instrumenting a model again refreshes its layers (after
// parameters were added or replaced). `model` may be destroyed while
// instrumented: its tensors are held weakly, so it then names nothing.
void instrument(torch::nn::Module& model);
// Stops `model`'s layers publishing, on every thread; a model that is not
// instrumented is left as it is. Thread-safe (the registry is swapped
// under a lock).
void uninstrument(torch::nn::Module& model);

// While alive, instrumented layers are the current layer of this thread
// while they run even without a subscriber: what the profiler needs to
// charge operators to them. Not copyable; one thread.
class Watch {
 public:
  // Counts a watch on the calling thread (they nest); the destructor must
  // run on the same thread.
  Watch();
  ~Watch();  // on the thread that made it
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
};

// Runs one named module layer: scope, forward, events.
torch::Tensor run_layer(const std::string& name, torch::nn::AnyModule& module, torch::Tensor x);
// The same for a module holder (Conv2d, Linear, ...): module->forward(x).
// `name` must outlive the call (it is the current layer while it runs);
// whatever the module's forward throws propagates.
template <typename ModuleHolder>
torch::Tensor run_layer(const std::string& name, ModuleHolder& module, torch::Tensor x);
// The same, with f() computing the module's output in its place (an exact
// faster kernel for the same function): events name the module.
template <typename F>
torch::Tensor run_layer_as(const std::string& name, torch::nn::AnyModule& module, torch::Tensor x,
                           F&& f);

// Runs one named functional layer (no module) so that it is timed and
// described like a module layer of type `type`; `ins` are its inputs.
template <typename F>
torch::Tensor run_function(const std::string& name, const std::string& type,
                           const std::vector<torch::Tensor>& ins, F&& f);

namespace detail {
// True when the calling thread has a subscriber.
bool subscribed();
// True when the calling thread has a subscriber or a Watch: a model of
// another framework (the Python package's) should then name its layers.
bool wanted();
// Publishes a finished forward pass (and arms the backward hook).
void publish(const std::string& name, const torch::nn::Module* module, const std::string& type,
             const std::vector<torch::Tensor>& ins, const torch::Tensor& out);
}  // namespace detail

template <typename F>
torch::Tensor run_function(const std::string& name, const std::string& type,
                           const std::vector<torch::Tensor>& ins, F&& f) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = f();
  }
  if (detail::subscribed()) detail::publish(name, nullptr, type, ins, out);
  return out;
}

template <typename F>
torch::Tensor run_layer_as(const std::string& name, torch::nn::AnyModule& module, torch::Tensor x,
                           F&& f) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = f();
  }
  if (detail::subscribed()) detail::publish(name, module.ptr().get(), std::string(), {x}, out);
  return out;
}

template <typename ModuleHolder>
torch::Tensor run_layer(const std::string& name, ModuleHolder& module, torch::Tensor x) {
  torch::Tensor out;
  {
    LayerScope scope(&name);
    out = module->forward(x);
  }
  if (detail::subscribed()) detail::publish(name, module.get(), std::string(), {x}, out);
  return out;
}

}  // namespace trainscope::layers
