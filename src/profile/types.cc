#include "trainscope/profile/types.h"

namespace trainscope::profile {

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

namespace {
double numel(const std::vector<int64_t>& s) {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return s.empty() ? 0 : n;
}
}  // namespace

double type_flops(const std::string& type, const std::vector<int64_t>& in,
                  const std::vector<int64_t>& out, int64_t in_channels, int64_t out_channels,
                  int64_t kernel_elems, int64_t groups) {
  const double cin = static_cast<double>(in_channels), cout = static_cast<double>(out_channels);
  if (type == "Conv1d" || type == "Conv2d" || type == "Conv3d") {
    if (cout <= 0 || groups <= 0) return 0;
    return 2.0 * cin / static_cast<double>(groups) * static_cast<double>(kernel_elems) * cout *
           numel(out) / cout;
  }
  if (type == "Linear") return cin > 0 ? 2.0 * cin * cout * numel(in) / cin : 0;
  if (type.rfind("BatchNorm", 0) == 0) return 4.0 * numel(out);
  if (type == "ReLU" || type == "Dropout" || type == "StreamDropout") return numel(out);
  if (type == "MaxPool1d" || type == "MaxPool2d" || type == "MaxPool3d")
    return static_cast<double>(kernel_elems) * numel(out);
  return 0;
}

void mark_input_gradients(std::vector<LayerInfo>& layers) {
  bool params_before = false;
  for (auto& l : layers) {
    l.input_grad = params_before;
    params_before = params_before || l.params > 0;
  }
}

}  // namespace trainscope::profile
