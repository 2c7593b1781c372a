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

namespace trainscope::profile {

// The phases a profiled iteration is split into (a training loop marks
// them with IterationProfiler::phase).
enum class Phase { kNone, kData, kForward, kLoss, kBackward, kZeroGrad, kUpdate, kRecording };
const char* to_string(Phase p);

struct TraceEvent {
  std::string name;
  std::string layer;  // empty when unattributed
  Phase phase = Phase::kNone;
  double start_us = 0, dur_us = 0;  // from the iteration start
  int64_t seq = -1;
  int depth = 0;
};

struct IterationProfile {
  int64_t step = 0;
  double wall_us = 0;
  // (layer, phase) -> self microseconds; layer "" = unattributed in phase.
  std::map<std::pair<std::string, Phase>, double> cells;
  std::map<Phase, double> span_us;      // wall-clock span of each phase
  std::map<Phase, double> overhead_us;  // span time outside any operator
  double other_us = 0;                  // outside every phase span
  double coverage = 0;                  // (wall - other) / wall
  std::vector<TraceEvent> events;       // for the Chrome trace
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
  ~IterationProfiler();

  // Starts an iteration: installs the callbacks. Operator events for a trace
  // are kept only when `keep_events` (and the constructor's flag) is set.
  void begin(int64_t step, bool keep_events = true);
  // Marks the start of a phase (ends the previous one).
  void phase(Phase p);
  // Ends the iteration, removes the callbacks and returns its profile.
  IterationProfile end();
  bool active() const { return active_; }

  struct State;  // shared with the callbacks

 private:
  torch::nn::Module& model_;
  bool keep_events_;
  StateFn state_fn_;
  bool active_ = false;
  std::unique_ptr<State> state_;
};

// --- per-layer facts -------------------------------------------------------------

struct LayerInfo {
  std::string name;
  std::string type;  // Conv2d, Linear, BatchNorm2d, ReLU, MaxPool2d, ...
  std::vector<int64_t> in_shape, out_shape;
  int64_t params = 0;
  int64_t param_tensors = 0;  // weight, bias, ...
  double param_bytes = 0;
  double flops = 0;             // forward FLOPs for the batch (formulas in flops.cc)
  double bytes = 0;             // input + output + parameter bytes moved (forward)
  double activation_bytes = 0;  // output tensor
  // Structural features for the cost model.
  int64_t in_channels = 0, out_channels = 0, kernel = 0, stride = 1, groups = 1;
  // Whether backward computes the gradient of this layer's input. False up to
  // and including the first layer with parameters in forward order: nothing
  // before it needs a gradient. Derived from the order, never stored (see
  // mark_input_gradients).
  bool input_grad = true;
};

// Sets `input_grad` of layers listed in forward order.
void mark_input_gradients(std::vector<LayerInfo>& layers);

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

}  // namespace trainscope::profile
