// A cost model that predicts training time from a network's structure.
//
// A layer's time in one training iteration is split the way the profiler
// measures it:
//   compute  forward + backward, per layer type (Conv2d, Linear, ReLU, Add...)
//              t = a * MFLOP + b * MB + c * Mparams + d
//            FLOPs as the vector unit executes them (vector_mflop), activation
//            bytes (inputs + output) at that batch size, the weight gradient
//            backward writes, and a fixed cost per call;
//   update   optimizer step + zero_grad, one law for every type
//              t = u * Mparams + v * parameter tensors
//            (an optimizer does the same work per element whatever the
//            layer; per tensor it pays dispatch).
// The time outside layers (data, loss, framework between operators, the
// gradient sums at branch points) is
//     t = e * layers + f * activation MB
// with no constant: it grows with the work the framework orchestrates.
//
// Coefficients are fitted by non-negative least squares, so no term can
// become a negative cost that only fits the training architectures. Compute
// rows are weighted by their layer's iteration (errors as a share of the
// iteration, which is what a prediction is judged by: a 100 us fc layer
// slowed by a cold cache after 200 ms of convolutions must not set the cost
// of every Linear); update and outside-layer rows by their own time
// (relative error; one law across all sizes). A layer type the model has
// never seen gets a compute model fitted on all layer types and is flagged
// as an estimate.
//
// Training data are profiled runs; repeats of one model, batch size and
// thread count are merged by medians, and each run is reduced to medians
// over its profiled iterations, so that one stalled iteration or one slow
// spell of a shared machine does not skew the fit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainscope/profile/report.h"
#include "trainscope/profile/types.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

// One profiled configuration (model x batch x threads) as training data.
struct ProfiledArch {
  std::vector<std::string> runs;  // merged runs (repeats)
  std::string model;
  int64_t batch = 0, threads = 0;
  std::vector<LayerInfo> layers;
  std::vector<double> layer_us;          // median fwd+bwd+update+zero_grad per layer
  std::vector<double> layer_compute_us;  // median fwd+bwd
  std::vector<double> layer_update_us;   // median update+zero_grad
  double iteration_us = 0;               // median wall time of a profiled iteration
};

// Forward + backward MFLOP of a layer as a vector unit of `lanes` floats
// executes them, divided by 3 so that it equals the forward MFLOP when
// nothing is wasted. Layers with weights (Conv2d, Linear) run three products:
// forward, weight gradient, and input gradient, the last only when
// `input_grad`: the first such layer of a network skips it. A Conv2d's
// forward and weight gradient vectorise over output channels per group, its
// input gradient over input channels per group (depthwise: all three over
// the channels); each pass is charged its channels rounded up to a multiple
// of `lanes` (oneDNN's blocked layouts), so LeNet's 6-channel input gradient
// costs 16/6 of its FLOPs on a 16-lane machine. Other types: forward MFLOP.
double vector_mflop(const LayerInfo& l, int lanes);

// Feature vectors (exposed for tests and docs).
std::vector<double> compute_features(const LayerInfo& l,
                                     int lanes);  // {vector MFLOP, activation MB, Mparams, 1}
std::vector<double> update_features(const LayerInfo& l);  // {Mparams, parameter tensors}
std::vector<double> overhead_features(
    const std::vector<LayerInfo>& layers);  // {layers, activation MB}

// A fitted linear cost model (fit, from_json): a plain value whose
// predictions are pure (any thread).
struct CostModel {
  std::map<std::string, std::vector<double>> coef;  // type -> coefficients of compute_features
  std::vector<double> generic;                      // compute of all types together (unseen types)
  std::vector<double> update;                       // coefficients of update_features
  std::vector<double> overhead;                     // coefficients of overhead_features
  int64_t samples = 0;                              // layer rows fitted
  int64_t threads = 0;                              // thread count of the training runs (0: mixed)
  int lanes = 16;  // float32 SIMD lanes of the machine it was fitted on (env::simd_float_lanes)

  // Predicted microseconds for one layer; `estimated` says if the type was unseen.
  double layer_us(const LayerInfo& l, bool* estimated = nullptr) const;
  // Predicted per-iteration overhead outside the layers (never negative).
  double overhead_us(const std::vector<LayerInfo>& layers) const;
  // Predicted microseconds of one iteration: the overhead plus every layer.
  double iteration_us(const std::vector<LayerInfo>& layers) const;
  // The model as JSON (format trainscope-costmodel/4), what from_json reads.
  std::string to_json() const;
  // Throws a usage error naming what is wrong for a file that is not a model.
  static CostModel from_json(const std::string& text);
};

// Reads every profiled run (or the given ones) from the store, merging
// repeats of one configuration. Throws Error(kNotFound) naming a given run
// that has no profiled step.
std::vector<ProfiledArch> load_profiled(store::Store& store, const std::vector<std::string>& runs);
// `lanes`: the SIMD width of the machine the profiles come from.
CostModel fit(const std::vector<ProfiledArch>& data, int lanes);

// One model's measured and predicted iteration time (microseconds).
struct EvalRow {
  std::string model;
  int64_t batch = 0;
  double measured_us = 0, predicted_us = 0;
};
// One layer's measured and predicted time (microseconds).
struct LayerEvalRow {
  std::string model, layer, type;
  int64_t batch = 0;
  double measured_us = 0, predicted_us = 0;
};
// What leave_one_architecture_out returns: a plain value.
struct CostModelEval {
  std::vector<EvalRow> rows;
  std::vector<LayerEvalRow> layer_rows;  // layers taking >= 1% of their iteration
  double iteration_mape = 0;             // percent
  double layer_mape = 0;                 // percent, over layer_rows
};
// Leave-one-architecture-out: for each model name, fit on the others.
CostModelEval leave_one_architecture_out(const std::vector<ProfiledArch>& data, int lanes);

}  // namespace trainscope::profile
