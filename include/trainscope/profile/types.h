// What a profile is made of, as plain data: the phases of an iteration,
// one profiled iteration, and the facts of one layer. Torch-free, so that
// reports, the cost model and readers of the store need no libtorch; the
// profiler that measures them is profiler.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::profile {

// The phases a profiled iteration is split into (a training loop marks
// them with IterationProfiler::phase).
enum class Phase { kNone, kData, kForward, kLoss, kBackward, kZeroGrad, kUpdate, kRecording };
// "none", "data", "forward", ...: a static string (any thread).
const char* to_string(Phase p);

// One operator call of a profiled iteration, for the Chrome trace.
struct TraceEvent {
  std::string name;
  std::string layer;  // empty when unattributed
  Phase phase = Phase::kNone;
  double start_us = 0, dur_us = 0;  // from the iteration start
  double self_us = 0;               // dur_us minus the operators it called
  int64_t seq = -1;
  int depth = 0;
};

// One profiled iteration: self times by (layer, phase), phase spans and
// overheads, and the operator events. A plain value.
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

// --- per-layer facts -------------------------------------------------------------

// The facts of one layer (its shapes, parameters, FLOPs and bytes) as the
// profiler describes it from one forward pass; recorded with the profile.
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

// Forward FLOPs of one layer of `type` for the batch, from its shapes and
// structure (the formulas of profiler.h's layer_flops): `in_channels` and
// `out_channels` are a Linear's features or a convolution's channels,
// `kernel_elems` the product of a convolution's or a pooling's kernel sides.
// 0 for a type without a formula (padding, containers: data movement only).
// Any model's layers are counted by it: libtorch's modules, Python's.
double type_flops(const std::string& type, const std::vector<int64_t>& in,
                  const std::vector<int64_t>& out, int64_t in_channels, int64_t out_channels,
                  int64_t kernel_elems, int64_t groups);

// Sets `input_grad` of layers listed in forward order.
void mark_input_gradients(std::vector<LayerInfo>& layers);

}  // namespace trainscope::profile
