// A cost model that predicts training time from a network's structure.
//
// Per layer type (Conv2d, Linear, BatchNorm2d, ReLU, MaxPool2d, ...), the
// time of one training iteration of a layer (forward + backward + update,
// microseconds) is fitted by least squares as a power law
//     ln t = a ln(flops) + b ln(bytes) + c ln(params + 1) + d
// with features from LayerInfo (flops and bytes of the forward pass at that
// batch size). The time outside layers is fitted the same way on ln(batch),
// ln(number of layers) and ln(input bytes). A layer type the model has never
// seen falls back to the fitted GFLOP/s of all layers (flagged "flops-only
// estimate").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainscope/profile/profiler.h"
#include "trainscope/profile/report.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

// One profiled run as training data.
struct ProfiledArch {
  std::string run, model;
  int64_t batch = 0;
  std::vector<LayerInfo> layers;
  std::vector<double> layer_us;  // measured fwd+bwd+update per layer (same order)
  double iteration_us = 0;       // mean wall time of a profiled iteration
};

struct CostModel {
  std::map<std::string, std::vector<double>> coef;  // type -> {a, b, c, d}
  std::vector<double> overhead;                     // {e, f}
  double fallback_us_per_flop = 0;
  int64_t samples = 0;

  // Predicted microseconds for one layer; `estimated` says if the type was unseen.
  double layer_us(const LayerInfo& l, bool* estimated = nullptr) const;
  double iteration_us(const std::vector<LayerInfo>& layers, int64_t batch) const;
  std::string to_json() const;
  static CostModel from_json(const std::string& text);
};

// Reads every profiled run (or the given ones) from the store.
std::vector<ProfiledArch> load_profiled(Store& store, const std::vector<std::string>& runs);
CostModel fit(const std::vector<ProfiledArch>& data);

struct EvalRow {
  std::string model;
  int64_t batch = 0;
  double measured_us = 0, predicted_us = 0;
};
struct CostModelEval {
  std::vector<EvalRow> rows;
  double iteration_mape = 0;  // percent
  double layer_mape = 0;      // percent, over layers taking >= 1% of their iteration
};
// Leave-one-architecture-out: for each model name, fit on the others.
CostModelEval leave_one_architecture_out(const std::vector<ProfiledArch>& data);

}  // namespace trainscope::profile
