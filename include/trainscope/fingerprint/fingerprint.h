// Fingerprints: the hash of every parameter, buffer and the loss after an
// optimizer step, so that `trainscope diff` names the first step and tensor
// where two runs part and `rerun --verify` proves a rerun bit-identical.
// The unit (registered by this component) records them every
// fingerprint.every_steps steps (fingerprint/config.h) from any event
// source.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/instrument/events.h"

namespace trainscope::fingerprint {

// The tensors a fingerprint hashes, in forward order: for each module in
// registration order, its own parameters then its buffers.
std::vector<std::pair<std::string, torch::Tensor>> tensors(torch::nn::Module& model);

// xxHash3-64 of a tensor's raw bytes (made contiguous first).
uint64_t tensor_hash(const torch::Tensor& t);

// Hashes every tensor of tensors() and the loss every
// fingerprint.every_steps steps, for `diff` and `rerun --verify`.
class FingerprintObserver : public instrument::TrainObserver {
 public:
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& step) override;

 private:
  std::vector<std::pair<std::string, torch::Tensor>> tensors_;
};

}  // namespace trainscope::fingerprint
