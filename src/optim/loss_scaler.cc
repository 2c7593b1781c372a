// The dynamic loss scale of fp16 mixed precision (loss_scaler.h), on
// libtorch's fused kernels (CPU and CUDA), as torch.amp.GradScaler uses them.
#include "trainscope/optim/loss_scaler.h"

#include <torch/torch.h>

namespace trainscope::optim {

LossScaler::LossScaler(const torch::Device& device, double init, double growth, double backoff,
                       int64_t interval)
    : scale_(torch::full({1}, init, torch::TensorOptions(torch::kFloat32).device(device))),
      growth_(torch::zeros({1}, torch::TensorOptions(torch::kInt32).device(device))),
      found_inf_(torch::zeros({1}, torch::TensorOptions(torch::kFloat32).device(device))),
      growth_factor_(growth),
      backoff_(backoff),
      interval_(interval) {}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const {
  return loss * scale_.to(loss.scalar_type());
}

bool LossScaler::unscale(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.mutable_grad());
  found_inf_.zero_();
  if (!grads.empty())
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, scale_.reciprocal());
  return found_inf_.item<float>() == 0.0f;
}

void LossScaler::update() {
  at::_amp_update_scale_(scale_, growth_, found_inf_, growth_factor_, backoff_, interval_);
}

double LossScaler::value() const { return scale_.item<double>(); }
int64_t LossScaler::good_steps() const { return growth_.item<int64_t>(); }

void LossScaler::restore(double scale, int64_t good_steps) {
  scale_.fill_(scale);
  growth_.fill_(good_steps);
}

}  // namespace trainscope::optim
