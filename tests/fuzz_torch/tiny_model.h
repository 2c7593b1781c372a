// The model every checkpoint of the fuzz corpus is written for and read into:
// the smallest the configs allow (an mlp of 4 hidden units, with dropout, on
// data.synthetic's smallest images, 1x8x8, and 3 classes) and Adam, so that a
// checkpoint is ~10 KB, most of it the archive's structure rather than weights.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/models/models.h"
#include "trainscope/optim/optim.h"

namespace trainscope::fuzz {

inline constexpr const char* kTinyConfig = R"(
seeds:
  master: 7
data:
  dataset: synthetic
  synthetic: {size: 32, classes: 3, channels: 1, height: 8, width: 8}
model: {name: mlp, hidden: 4, dropout: 0.25}
optimizer: {name: adam, lr: 0.01}
)";

struct Tiny {
  config::Config config;
  at::Generator dropout_gen;
  std::shared_ptr<models::Classifier> model;

  std::unique_ptr<optim::Optimizer> optimizer() const {
    return optim::make_optimizer(config.optimizer, model->parameters());
  }
  // A fixed batch of 8 images and their labels.
  std::pair<torch::Tensor, torch::Tensor> batch() const {
    const auto& s = config.data.synthetic;
    auto g = at::detail::createCPUGenerator(3);
    return {torch::randn({8, s.channels, s.height, s.width}, g),
            torch::randint(0, s.classes, {8}, g, torch::kInt64)};
  }
  // One training step on batch(), as the trainer's loop takes it.
  void step(optim::Optimizer& opt) const {
    auto [x, y] = batch();
    opt.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    opt.step();
  }
};

// `sets` are --set overrides of kTinyConfig ("model.hidden=5").
inline Tiny make_tiny(const std::vector<std::string>& sets = {}) {
  Tiny t;
  t.config = config::parse_config(kTinyConfig, sets, "tiny.yaml");
  const auto& s = t.config.data.synthetic;
  t.dropout_gen = at::detail::createCPUGenerator(1);
  torch::manual_seed(static_cast<uint64_t>(t.config.seeds.master));
  t.model =
      models::make_model(t.config.model, {s.channels, s.height, s.width, s.classes}, t.dropout_gen);
  return t;
}

}  // namespace trainscope::fuzz
