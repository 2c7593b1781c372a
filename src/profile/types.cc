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

void mark_input_gradients(std::vector<LayerInfo>& layers) {
  bool params_before = false;
  for (auto& l : layers) {
    l.input_grad = params_before;
    params_before = params_before || l.params > 0;
  }
}

}  // namespace trainscope::profile
