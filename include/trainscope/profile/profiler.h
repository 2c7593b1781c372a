// Per-layer, per-phase time of training iterations that accounts for the
// whole iteration.
//
// During a profiled iteration, thread-local RecordFunction callbacks see
// every libtorch operator. An operator's *self* time (its duration minus
// its children's) goes to one (layer, phase) cell:
//   forward   the layer scope active when it ran (see scope.h); its autograd
//             sequence number is remembered for that layer;
//   backward  the layer whose forward op had the same sequence number (the
//             autograd node records it), else the enclosing backward event's
//             layer;
//   update    the layer owning a parameter, its gradient or its optimizer
//             state among its inputs; a top-level update op on temporaries
//             only goes to the layer of the previous owned op (optimizers
//             work one parameter at a time).
// What no layer claims stays in the phase ("forward (unattributed)", ...).
// A user scope (RECORD_USER_SCOPE) named instrument::kScopeLayerPrefix +
// NAME is a layer of its own, NAME, in the phase it runs in: work a unit
// does in the step that belongs to no layer of the model (the data-parallel
// all-reduce of each bucket, "dist: all-reduce bucket 0").
// The trainer measures each phase's wall-clock span; the time of a span not
// inside any operator is the phase's framework overhead, and whatever lies
// outside all spans is "other". Categories therefore sum to the iteration's
// wall time; coverage = (wall - other) / wall.
#pragma once

#include <torch/nn/module.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/layers/layers.h"
#include "trainscope/profile/types.h"

namespace trainscope::profile {

// A module that says what it is: a stand-in for a layer of another
// framework (the Python package's mirror of a PyTorch model), whose type and
// structure the FLOP formulas and the layer facts take from here.
class DescribedModule : public torch::nn::Module {
 public:
  // What the layer is, for the FLOP formulas and the layer facts.
  struct Structure {
    std::string type;                           // "Conv2d", "Linear", ...
    int64_t in_channels = 0, out_channels = 0;  // or a Linear's features
    int64_t kernel = 0, kernel_elems = 0;       // first side, product of the sides
    int64_t stride = 1, groups = 1;
  };
  // A module named by s.type that describes itself as `s`.
  explicit DescribedModule(Structure s) : torch::nn::Module(s.type), structure_(std::move(s)) {}
  const Structure& structure() const { return structure_; }

 private:
  Structure structure_;
};

// Profiles one iteration at a time on the calling thread. Not thread-safe;
// one instance per training thread.
class IterationProfiler {
 public:
  // (parameter, optimizer state tensor) pairs, e.g. Adam's moments.
  using StateFn = std::function<std::vector<std::pair<torch::Tensor, torch::Tensor>>()>;

  // `model` maps parameter/gradient storage to layer names for updates;
  // `state`, when given, adds the optimizer's per-parameter state tensors.
  explicit IterationProfiler(torch::nn::Module& model, bool keep_events = true,
                             StateFn state = nullptr);
  // Ends an iteration still in progress (removing the callbacks).
  ~IterationProfiler();

  // Starts an iteration: installs the callbacks. Operator events for a trace
  // are kept only when `keep_events` (and the constructor's flag) is set.
  void begin(int64_t step, bool keep_events = true);
  // Marks the start of a phase (ends the previous one).
  void phase(Phase p);
  // Ends the iteration, removes the callbacks and returns its profile.
  IterationProfile end();
  // Whether an iteration is in progress (between begin and end).
  bool active() const { return active_; }

  struct State;  // shared with the callbacks

 private:
  torch::nn::Module& model_;
  bool keep_events_;
  StateFn state_fn_;
  bool active_ = false;
  std::unique_ptr<State> state_;
};

// Runs one forward pass of `model` on `x`, subscribed to its layer events
// (layers.h), and returns every named layer's facts in forward order.
std::vector<LayerInfo> describe_layers(torch::nn::Module& model,
                                       const std::function<torch::Tensor(torch::Tensor)>& forward,
                                       const torch::Tensor& x);

// Forward FLOPs of one layer from its module and shapes (0 when unknown):
//   Conv2d      2 * Cin/groups * k_h * k_w * Cout * H_out * W_out * N
//   Linear      2 * in * out * N
//   BatchNorm2d 4 * numel (normalise: sub, mul; affine: mul, add)
//   ReLU, Dropout 1 * numel;  MaxPool2d k_h*k_w * numel_out;  AvgPool numel_in
// Backward is about 2x forward (both input and weight gradients).
double layer_flops(const torch::nn::Module& m, const std::vector<int64_t>& in,
                   const std::vector<int64_t>& out, std::string* type = nullptr);
// Forward FLOPs of a functional layer (layers::run_function):
//   Add (n inputs) (n-1) * numel_out;  ReLU numel_out;  AdaptiveAvgPool2d numel_in
double function_flops(const std::string& type, const std::vector<torch::Tensor>& ins,
                      const torch::Tensor& out);

// Measured peak GFLOP/s of a float32 GEMM on this machine with the current
// thread count (1024x1024x1024, best of several), cached under
// $XDG_CACHE_HOME/trainscope or ~/.cache/trainscope.
double peak_gflops();

}  // namespace trainscope::profile
