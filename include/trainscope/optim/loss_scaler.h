// The dynamic loss scale of fp16 mixed precision (compute.autocast: fp16),
// as torch.amp.GradScaler keeps it: the loss is multiplied by the scale
// before backward so that small fp16 gradients do not flush to zero; the
// gradients are divided by it before the update; a step whose gradients
// hold an inf or NaN is skipped and the scale halves; after `interval`
// good steps in a row it doubles. The scale and its counter live on the
// model's device (libtorch's fused _amp_* kernels), and a checkpoint keeps
// them (TrainPosition::loss_scale, scale_growth).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace trainscope::optim {

// One run's loss scale (see above): made by the trainer for
// compute.autocast: fp16, on the model's device.
class LossScaler {
 public:
  // torch.amp.GradScaler's defaults.
  explicit LossScaler(const torch::Device& device, double init = 65536.0, double growth = 2.0,
                      double backoff = 0.5, int64_t interval = 2000);

  // The loss to run backward on: loss * scale.
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides every defined gradient of `params` by the scale; true when all
  // of them are finite (the update may go ahead). Waits for the device.
  bool unscale(const std::vector<torch::Tensor>& params);
  // After the step: backs off after a skipped one, grows after `interval`
  // good ones.
  void update();

  // The scale now (waits for the device).
  double value() const;
  // The good steps in a row counted towards the next growth.
  int64_t good_steps() const;
  // From a checkpoint (value(), good_steps()).
  void restore(double scale, int64_t good_steps);

 private:
  torch::Tensor scale_;      // float32 [1]
  torch::Tensor growth_;     // int32 [1]: good steps in a row
  torch::Tensor found_inf_;  // float32 [1]
  double growth_factor_, backoff_;
  int64_t interval_;
};

}  // namespace trainscope::optim
