// The studies' models by name. Every model adapts to 1x28x28 and 3x32x32
// inputs (models built for 32x32 zero-pad smaller inputs to 32x32 in a layer
// named `input_pad`), and every layer has a stable dotted name
// (`features.conv3`) that every recorder uses.
//
//   mlp              Linear-ReLU x2, Linear (hidden units x width)
//   demo_cnn         2 conv (16, 32) + ReLU + max-pool, Linear(128), Linear
//   lenet5           LeNet-5 with ReLU and max-pool
//   alexnet_mini     5 conv AlexNet for 32x32, 3 Linear
//   vgg11_seed       BRIEF §1: 8 conv3x3 + BN + ReLU, pools after conv 1,2,4,6,8, Linear(512)
//   vgg11, vgg16     CIFAR-style VGG with BN, classifier 512-512-classes
//   resnet18         CIFAR-style ResNet-18 (BasicBlock, 3x3 stem)
//   preact_resnet18  pre-activation ResNet-18
//   mobilenet_v1     depthwise-separable MobileNet, CIFAR stem, width multiplier
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/data/data.h"

namespace trainscope::models {

// A classifier: images [B, C, H, W] -> logits [B, classes].
class Classifier : public torch::nn::Module {
 public:
  // Logits [B, classes] of `x` [B, C, H, W] in the model's dtype; called on
  // the training thread (layer events, when instrumented, are raised there).
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// What a model is built for: input channels and size, and output classes.
struct ModelShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t classes = 10;
};

// The input shape and class count of a dataset's training split.
ModelShape shape_of(const data::DataSplits& data);
// The same from the config alone, without reading the data (the cost
// model's predictions): each dataset's known shape, a synthetic one's keys.
ModelShape shape_of(const config::DataConfig& data);

// Builds a model. `dropout_gen` supplies dropout masks (the dropout stream);
// it must outlive the model. Throws Error for an unknown name or a shape
// the model cannot take.
std::shared_ptr<Classifier> make_model(const config::ModelConfig& config, const ModelShape& shape,
                                       at::Generator dropout_gen);

// torch::max_pool2d(x, k) (window k x k, stride k, floor mode) of an NCHW
// input, as the elementwise maximum of the window's k*k strided views.
// libtorch 1.13's NCHW max_pool2d kernel runs a scalar loop per output
// (8x slower at the demo CNN's sizes on one thread); a maximum is exact, so
// the values are the same, NaN included. It has no indices for a backward
// pass: the models use it only when no gradient is wanted (evaluation).
torch::Tensor max_pool_no_grad(const torch::Tensor& x, int64_t k);

// Lays every 4-D parameter and buffer (conv weights) out channels-last
// (NHWC); convolutions then produce channels-last activations.
void to_channels_last(torch::nn::Module& model);

// Re-initialises every Conv2d, Linear and BatchNorm parameter with `scheme`
// ("default" reproduces libtorch's reset_parameters), drawing only from `gen`.
void init_weights(torch::nn::Module& model, const std::string& scheme, at::Generator gen);
// Flips the lowest mantissa bit of one parameter element, the element
// chosen from `n` (> 0) by a hash over all elements in parameter order.
// Returns "<parameter>[<index>]".
std::string flip_lowest_bit(torch::nn::Module& model, int64_t n);

// The names make_model knows, in a fixed order (for messages and `config
// keys`).
std::vector<std::string> model_names();

// Dropout that draws its mask from a given generator instead of the global one.
class StreamDropoutImpl : public torch::nn::Module {
 public:
  // Drops with probability `p`, drawing from `gen` (shared: the generator's
  // state advances with each training forward).
  StreamDropoutImpl(double p, at::Generator gen) : p_(p), gen_(std::move(gen)) {}
  // `x` itself in eval mode or when p <= 0; else x * mask / (1 - p), the
  // mask a new Bernoulli(1 - p) draw from the generator.
  torch::Tensor forward(torch::Tensor x);

 private:
  double p_;
  at::Generator gen_;
};
TORCH_MODULE(StreamDropout);

}  // namespace trainscope::models
