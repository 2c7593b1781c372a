#include "trainscope/models/models.h"

#include <torch/torch.h>

#include <cmath>
#include <cstring>

#include "trainscope/core/error.h"
#include "trainscope/layers/layers.h"

namespace nn = torch::nn;

namespace trainscope::models {
using core::ErrorKind;
using core::fail;

torch::Tensor StreamDropoutImpl::forward(torch::Tensor x) {
  if (!is_training() || p_ <= 0) return x;
  auto mask = torch::empty_like(x).bernoulli_(1.0 - p_, gen_);
  return x * mask / (1.0 - p_);
}

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0,
                int64_t groups = 1, bool bias = true) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).groups(groups).bias(bias));
}

// Pads inputs smaller than 32x32 to 32x32 (models designed for CIFAR).
struct PadTo32Impl : nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    int64_t ph = std::max<int64_t>(0, 32 - x.size(2)), pw = std::max<int64_t>(0, 32 - x.size(3));
    if (ph == 0 && pw == 0) return x;
    return torch::constant_pad_nd(x, {pw / 2, pw - pw / 2, ph / 2, ph - ph / 2}, 0);
  }
};
TORCH_MODULE(PadTo32);

// Runs a Sequential child by child, each inside its layer scope
// ("<prefix>.<child>"). Names are built once, on first use.
// The window k of a MaxPool2d module that max_pool_no_grad computes for
// x (a k x k window, stride k, no padding or dilation, floor mode, a
// contiguous NCHW input, no gradient wanted); 0 for every other module or
// input.
int64_t no_grad_pool_window(nn::AnyModule& m, const torch::Tensor& x) {
  if (torch::GradMode::is_enabled() || x.dim() != 4 || !x.is_contiguous()) return 0;
  const auto* p = dynamic_cast<const nn::MaxPool2dImpl*>(m.ptr().get());
  if (!p) return 0;
  const auto& o = p->options;
  const int64_t k = (*o.kernel_size())[0];
  const bool square = (*o.kernel_size())[1] == k && (*o.stride())[0] == k && (*o.stride())[1] == k;
  const bool plain = (*o.padding())[0] == 0 && (*o.padding())[1] == 0 && (*o.dilation())[0] == 1 &&
                     (*o.dilation())[1] == 1 && !o.ceil_mode();
  return square && plain && k >= 1 && x.size(2) >= k && x.size(3) >= k ? k : 0;
}

torch::Tensor forward_scoped(nn::Sequential& seq, const std::string& prefix,
                             std::vector<std::string>& names, torch::Tensor x) {
  if (names.size() != seq->size()) {
    names.clear();
    for (const auto& c : seq->named_children()) names.push_back(prefix + "." + c.key());
  }
  size_t i = 0;
  for (auto it = seq->begin(); it != seq->end(); ++it) {
    const std::string& name = names[i++];
    const int64_t k = no_grad_pool_window(*it, x);
    x = k > 0 ? layers::run_layer_as(name, *it, x, [&] { return max_pool_no_grad(x, k); })
              : layers::run_layer(name, *it, x);
  }
  return x;
}

// features (Sequential) -> flatten -> classifier (Sequential).
class SequentialNet : public Classifier {
 public:
  SequentialNet() {
    features = register_module("features", nn::Sequential());
    classifier = register_module("classifier", nn::Sequential());
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = forward_scoped(features, "features", feature_names_, x);
    return forward_scoped(classifier, "classifier", classifier_names_, x.flatten(1));
  }
  nn::Sequential features{nullptr}, classifier{nullptr};

 private:
  std::vector<std::string> feature_names_, classifier_names_;
};

// Output size of `features` for a given input shape.
int64_t flat_size(nn::Sequential& seq, const ModelShape& s) {
  torch::NoGradGuard ng;
  bool was = seq->is_training();
  seq->eval();
  auto out = seq->forward(torch::zeros({1, s.channels, s.height, s.width}));
  seq->train(was);
  return out.numel();
}

void add_dropout(nn::Sequential& seq, const std::string& name, double p, at::Generator gen) {
  if (p > 0) seq->push_back(std::string(name), StreamDropout(p, gen));
}

std::shared_ptr<Classifier> make_mlp(const config::ModelConfig& c, const ModelShape& s,
                                     at::Generator g) {
  auto net = std::make_shared<SequentialNet>();
  int64_t h = std::max<int64_t>(1, std::llround(static_cast<double>(c.hidden) * c.width));
  net->features->push_back("flatten", nn::Flatten());
  int64_t in = s.channels * s.height * s.width;
  net->classifier->push_back("fc1", nn::Linear(in, h));
  net->classifier->push_back("relu1", nn::ReLU());
  net->classifier->push_back("fc2", nn::Linear(h, h));
  net->classifier->push_back("relu2", nn::ReLU());
  add_dropout(net->classifier, "dropout", c.dropout, g);
  net->classifier->push_back("fc3", nn::Linear(h, s.classes));
  return net;
}

std::shared_ptr<Classifier> make_demo_cnn(const config::ModelConfig& c, const ModelShape& s,
                                          at::Generator g) {
  auto net = std::make_shared<SequentialNet>();
  auto& f = net->features;
  f->push_back("conv1", conv(s.channels, 16, 3, 1, 1));
  f->push_back("relu1", nn::ReLU());
  f->push_back("pool1", nn::MaxPool2d(2));
  f->push_back("conv2", conv(16, 32, 3, 1, 1));
  f->push_back("relu2", nn::ReLU());
  f->push_back("pool2", nn::MaxPool2d(2));
  int64_t flat = flat_size(f, s);
  net->classifier->push_back("fc1", nn::Linear(flat, 128));
  net->classifier->push_back("relu", nn::ReLU());
  add_dropout(net->classifier, "dropout", c.dropout, g);
  net->classifier->push_back("fc2", nn::Linear(128, s.classes));
  return net;
}

std::shared_ptr<Classifier> make_lenet5(const config::ModelConfig& c, const ModelShape& s,
                                        at::Generator g) {
  auto net = std::make_shared<SequentialNet>();
  auto& f = net->features;
  f->push_back("conv1", conv(s.channels, 6, 5, 1, s.height < 32 ? 2 : 0));
  f->push_back("relu1", nn::ReLU());
  f->push_back("pool1", nn::MaxPool2d(2));
  f->push_back("conv2", conv(6, 16, 5));
  f->push_back("relu2", nn::ReLU());
  f->push_back("pool2", nn::MaxPool2d(2));
  int64_t flat = flat_size(f, s);
  auto& k = net->classifier;
  k->push_back("fc1", nn::Linear(flat, 120));
  k->push_back("relu1", nn::ReLU());
  k->push_back("fc2", nn::Linear(120, 84));
  k->push_back("relu2", nn::ReLU());
  add_dropout(k, "dropout", c.dropout, g);
  k->push_back("fc3", nn::Linear(84, s.classes));
  return net;
}

std::shared_ptr<Classifier> make_alexnet_mini(const config::ModelConfig& c, const ModelShape& s,
                                              at::Generator g) {
  auto net = std::make_shared<SequentialNet>();
  auto& f = net->features;
  f->push_back("input_pad", PadTo32());
  const int64_t ch[] = {64, 192, 384, 256, 256};
  int64_t in = s.channels;
  for (int i = 0; i < 5; ++i) {
    std::string n = std::to_string(i + 1);
    f->push_back("conv" + n, conv(in, ch[i], 3, 1, 1));
    f->push_back("relu" + n, nn::ReLU());
    if (i == 0 || i == 1 || i == 4) f->push_back("pool" + n, nn::MaxPool2d(2));
    in = ch[i];
  }
  int64_t flat = flat_size(f, s);
  auto& k = net->classifier;
  add_dropout(k, "dropout1", c.dropout, g);
  k->push_back("fc1", nn::Linear(flat, 512));
  k->push_back("relu1", nn::ReLU());
  add_dropout(k, "dropout2", c.dropout, g);
  k->push_back("fc2", nn::Linear(512, 512));
  k->push_back("relu2", nn::ReLU());
  k->push_back("fc3", nn::Linear(512, s.classes));
  return net;
}

// cfg: channel counts, 0 = max-pool.
std::shared_ptr<Classifier> make_vgg(const std::vector<int64_t>& cfg, bool big_classifier,
                                     const config::ModelConfig& c, const ModelShape& s,
                                     at::Generator g) {
  auto net = std::make_shared<SequentialNet>();
  auto& f = net->features;
  f->push_back("input_pad", PadTo32());
  int64_t in = s.channels, n = 0, p = 0;
  for (int64_t v : cfg) {
    if (v == 0) {
      f->push_back("pool" + std::to_string(++p), nn::MaxPool2d(2));
      continue;
    }
    std::string k = std::to_string(++n);
    f->push_back("conv" + k, conv(in, v, 3, 1, 1));
    f->push_back("bn" + k, nn::BatchNorm2d(v));
    f->push_back("relu" + k, nn::ReLU());
    in = v;
  }
  int64_t flat = flat_size(f, s);
  auto& k = net->classifier;
  if (big_classifier) {
    k->push_back("fc1", nn::Linear(flat, 512));
    k->push_back("relu1", nn::ReLU());
    add_dropout(k, "dropout1", c.dropout, g);
    k->push_back("fc2", nn::Linear(512, 512));
    k->push_back("relu2", nn::ReLU());
    add_dropout(k, "dropout2", c.dropout, g);
    k->push_back("fc3", nn::Linear(512, s.classes));
  } else {
    add_dropout(k, "dropout", c.dropout, g);
    k->push_back("fc", nn::Linear(flat, s.classes));
  }
  return net;
}

// --- ResNet -------------------------------------------------------------------

// torch::relu as a functional layer of its own (see layers::run_function).
torch::Tensor relu_layer(const std::string& name, const torch::Tensor& t) {
  return layers::run_function(name, "ReLU", {t}, [&] { return torch::relu(t); });
}

struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(const std::string& name, int64_t in, int64_t out, int64_t stride, bool preact)
      : preact_(preact),
        n_conv1_(name + ".conv1"),
        n_conv2_(name + ".conv2"),
        n_bn1_(name + ".bn1"),
        n_bn2_(name + ".bn2"),
        n_relu1_(name + ".relu1"),
        n_relu2_(name + ".relu2"),
        n_shortcut_(name + ".shortcut"),
        n_add_(name + ".add") {
    if (preact) bn1 = register_module("bn1", nn::BatchNorm2d(in));
    conv1 = register_module("conv1", conv(in, out, 3, stride, 1, 1, false));
    if (!preact) bn1 = register_module("bn1", nn::BatchNorm2d(out));
    bn2 = register_module("bn2", nn::BatchNorm2d(out));
    conv2 = register_module("conv2", conv(out, out, 3, 1, 1, 1, false));
    if (stride != 1 || in != out) {
      shortcut = register_module("shortcut", nn::Sequential());
      shortcut->push_back("conv", conv(in, out, 1, stride, 0, 1, false));
      if (!preact) shortcut->push_back("bn", nn::BatchNorm2d(out));
    }
  }
  // ReLUs and the residual add are functional layers of their own, so that
  // the profiler and the cost model see them (not folded into a BatchNorm).
  torch::Tensor forward(torch::Tensor x) {
    using layers::run_function;
    using layers::run_layer;
    if (preact_) {
      auto o = relu_layer(n_relu1_, run_layer(n_bn1_, bn1, x));
      auto sc = shortcut ? forward_scoped(shortcut, n_shortcut_, sc_names_, o) : x;
      o = run_layer(n_conv1_, conv1, o);
      o = relu_layer(n_relu2_, run_layer(n_bn2_, bn2, o));
      o = run_layer(n_conv2_, conv2, o);
      return run_function(n_add_, "Add", {o, sc}, [&] { return o + sc; });
    }
    auto o = run_layer(n_conv1_, conv1, x);
    o = relu_layer(n_relu1_, run_layer(n_bn1_, bn1, o));
    o = run_layer(n_bn2_, bn2, run_layer(n_conv2_, conv2, o));
    auto sc = shortcut ? forward_scoped(shortcut, n_shortcut_, sc_names_, x) : x;
    o = run_function(n_add_, "Add", {o, sc}, [&] { return o + sc; });
    return relu_layer(n_relu2_, o);
  }
  bool preact_;
  std::string n_conv1_, n_conv2_, n_bn1_, n_bn2_, n_relu1_, n_relu2_, n_shortcut_, n_add_;
  std::vector<std::string> sc_names_;  // shortcut.conv, shortcut.bn
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

class ResNet18 : public Classifier {
 public:
  ResNet18(bool preact, const config::ModelConfig& c, const ModelShape& s, at::Generator g)
      : preact_(preact) {
    input_pad = register_module("input_pad", PadTo32());
    conv1 = register_module("conv1", conv(s.channels, 64, 3, 1, 1, 1, false));
    bn1 = register_module("bn1", nn::BatchNorm2d(preact ? 512 : 64));
    int64_t in = 64;
    const int64_t widths[] = {64, 128, 256, 512};
    for (int l = 0; l < 4; ++l) {
      nn::Sequential layer;
      for (int b = 0; b < 2; ++b) {
        layer->push_back(std::to_string(b),
                         BasicBlock("layer" + std::to_string(l + 1) + "." + std::to_string(b), in,
                                    widths[l], (b == 0 && l > 0) ? 2 : 1, preact));
        in = widths[l];
      }
      layers.push_back(register_module("layer" + std::to_string(l + 1), layer));
    }
    dropout = register_module("dropout", StreamDropout(c.dropout, g));
    fc = register_module("fc", nn::Linear(512, s.classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    using layers::run_function;
    using layers::run_layer;
    static const std::string kPad = "input_pad", kConv1 = "conv1", kBn1 = "bn1", kRelu = "relu",
                             kPool = "avgpool", kDrop = "dropout", kFc = "fc";
    auto bn_relu = [&](const torch::Tensor& t) {
      return relu_layer(kRelu, run_layer(kBn1, bn1, t));
    };
    x = run_layer(kConv1, conv1, run_layer(kPad, input_pad, x));
    if (!preact_) x = bn_relu(x);
    for (auto& l : layers) x = l->forward(x);  // blocks scope their own layers
    if (preact_) x = bn_relu(x);
    x = run_function(kPool, "AdaptiveAvgPool2d", {x}, [&] {
      return torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    });
    return run_layer(kFc, fc, run_layer(kDrop, dropout, x));
  }

 private:
  bool preact_;
  PadTo32 input_pad{nullptr};
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::vector<nn::Sequential> layers;
  StreamDropout dropout{nullptr};
  nn::Linear fc{nullptr};
};

// --- MobileNet v1 ------------------------------------------------------------------

class MobileNetV1 : public Classifier {
 public:
  MobileNetV1(const config::ModelConfig& c, const ModelShape& s, at::Generator g) {
    auto w = [&](int64_t ch) {
      return std::max<int64_t>(8, std::llround(static_cast<double>(ch) * c.width));
    };
    features = register_module("features", nn::Sequential());
    features->push_back("input_pad", PadTo32());
    features->push_back("conv1", conv(s.channels, w(32), 3, 1, 1, 1, false));
    features->push_back("bn1", nn::BatchNorm2d(w(32)));
    features->push_back("relu1", nn::ReLU());
    // (out channels, stride) of each depthwise-separable block.
    const std::pair<int64_t, int64_t> cfg[] = {{64, 1},  {128, 2},  {128, 1}, {256, 2}, {256, 1},
                                               {512, 2}, {512, 1},  {512, 1}, {512, 1}, {512, 1},
                                               {512, 1}, {1024, 2}, {1024, 1}};
    int64_t in = w(32), i = 0;
    for (auto [out, stride] : cfg) {
      std::string n = std::to_string(++i);
      features->push_back("dw" + n, conv(in, in, 3, stride, 1, in, false));
      features->push_back("dw_bn" + n, nn::BatchNorm2d(in));
      features->push_back("dw_relu" + n, nn::ReLU());
      features->push_back("pw" + n, conv(in, w(out), 1, 1, 0, 1, false));
      features->push_back("pw_bn" + n, nn::BatchNorm2d(w(out)));
      features->push_back("pw_relu" + n, nn::ReLU());
      in = w(out);
    }
    dropout = register_module("dropout", StreamDropout(c.dropout, g));
    fc = register_module("fc", nn::Linear(in, s.classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    static const std::string kPool = "avgpool", kDrop = "dropout", kFc = "fc";
    x = forward_scoped(features, "features", names_, x);
    x = layers::run_function(kPool, "AdaptiveAvgPool2d", {x}, [&] {
      return torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    });
    return layers::run_layer(kFc, fc, layers::run_layer(kDrop, dropout, x));
  }

 private:
  std::vector<std::string> names_;
  nn::Sequential features{nullptr};
  StreamDropout dropout{nullptr};
  nn::Linear fc{nullptr};
};

std::pair<double, double> fans(const torch::Tensor& w) {
  double receptive = w.dim() > 2 ? static_cast<double>(w[0][0].numel()) : 1.0;
  return {static_cast<double>(w.size(1)) * receptive, static_cast<double>(w.size(0)) * receptive};
}

}  // namespace

std::vector<std::string> model_names() {
  return {"mlp",   "demo_cnn", "lenet5",   "alexnet_mini",    "vgg11_seed",
          "vgg11", "vgg16",    "resnet18", "preact_resnet18", "mobilenet_v1"};
}

void to_channels_last(nn::Module& model) {
  torch::NoGradGuard ng;
  for (auto& p : model.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
  for (auto& b : model.buffers())
    if (b.dim() == 4) b.set_data(b.contiguous(torch::MemoryFormat::ChannelsLast));
}

ModelShape shape_of(const data::DataSplits& d) {
  return {d.train.images.size(1), d.train.images.size(2), d.train.images.size(3), d.train.classes};
}

ModelShape shape_of(const config::DataConfig& c) {
  if (c.dataset == "cifar10") return {3, 32, 32, 10};
  if (c.dataset == "cifar100") return {3, 32, 32, 100};
  if (c.dataset == "synthetic")
    return {c.synthetic.channels, c.synthetic.height, c.synthetic.width, c.synthetic.classes};
  return {1, 28, 28, 10};  // fashion-mnist, mnist
}

torch::Tensor max_pool_no_grad(const torch::Tensor& x, int64_t k) {
  const int64_t ho = x.size(2) / k, wo = x.size(3) / k;
  torch::Tensor out;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      torch::Tensor view =
          x.slice(2, i, i + k * (ho - 1) + 1, k).slice(3, j, j + k * (wo - 1) + 1, k);
      out = out.defined() ? torch::maximum(out, view) : view;
    }
  return k == 1 ? out.clone() : out;
}

std::shared_ptr<Classifier> make_model(const config::ModelConfig& c, const ModelShape& s,
                                       at::Generator g) {
  if (s.height < 8 || s.width < 8)
    fail(ErrorKind::kUsage, "model {}: inputs of {}x{} are too small (need at least 8x8)", c.name,
         s.height, s.width);
  bool needs_32 = c.name != "mlp" && c.name != "demo_cnn" && c.name != "lenet5";
  if (needs_32 && (s.height > 32 || s.width > 32))
    fail(ErrorKind::kUsage, "model {} takes inputs up to 32x32 (got {}x{})", c.name, s.height,
         s.width);
  if (c.name == "mlp") return make_mlp(c, s, g);
  if (c.name == "demo_cnn") return make_demo_cnn(c, s, g);
  if (c.name == "lenet5") return make_lenet5(c, s, g);
  if (c.name == "alexnet_mini") return make_alexnet_mini(c, s, g);
  if (c.name == "vgg11_seed")
    return make_vgg({64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0}, false, c, s, g);
  if (c.name == "vgg11")
    return make_vgg({64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0}, true, c, s, g);
  if (c.name == "vgg16")
    return make_vgg({64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0},
                    true, c, s, g);
  if (c.name == "resnet18") return std::make_shared<ResNet18>(false, c, s, g);
  if (c.name == "preact_resnet18") return std::make_shared<ResNet18>(true, c, s, g);
  if (c.name == "mobilenet_v1") return std::make_shared<MobileNetV1>(c, s, g);
  std::string names;
  for (const auto& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  fail(ErrorKind::kUsage, "unknown model '{}'; available: {}", c.name, names);
}

std::string flip_lowest_bit(torch::nn::Module& model, int64_t n) {
  torch::NoGradGuard ng;
  auto params = model.named_parameters();
  int64_t total = 0;
  for (const auto& p : params) total += p.value().numel();
  // splitmix64 of n: neighbouring numbers pick unrelated elements.
  uint64_t z = static_cast<uint64_t>(n) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  int64_t at = static_cast<int64_t>((z ^ (z >> 31)) % static_cast<uint64_t>(total));
  for (const auto& p : params) {
    torch::Tensor t = p.value();
    if (at >= t.numel()) {
      at -= t.numel();
      continue;
    }
    torch::Tensor flat = t.view(-1);  // parameters are contiguous after init
    if (t.scalar_type() == torch::kFloat64) {
      auto* v = flat.data_ptr<double>() + at;
      uint64_t bits;
      std::memcpy(&bits, v, 8);
      bits ^= 1;
      std::memcpy(v, &bits, 8);
    } else {
      auto* v = flat.data_ptr<float>() + at;
      uint32_t bits;
      std::memcpy(&bits, v, 4);
      bits ^= 1;
      std::memcpy(v, &bits, 4);
    }
    return p.key() + "[" + std::to_string(at) + "]";
  }
  return {};
}

void init_weights(torch::nn::Module& model, const std::string& scheme, at::Generator gen) {
  torch::NoGradGuard ng;
  for (auto& m : model.modules(/*include_self=*/false)) {
    torch::Tensor w, b;
    if (auto* cv = m->as<nn::Conv2d>()) {
      w = cv->weight;
      b = cv->bias;
    } else if (auto* l = m->as<nn::Linear>()) {
      w = l->weight;
      b = l->bias;
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      if (bn->weight.defined()) bn->weight.fill_(1);
      if (bn->bias.defined()) bn->bias.zero_();
      continue;
    } else {
      continue;
    }
    auto [fan_in, fan_out] = fans(w);
    if (scheme == "default") {
      // libtorch's reset_parameters: kaiming_uniform(a = sqrt(5)) for the
      // weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias.
      double bound = 1.0 / std::sqrt(fan_in);
      w.uniform_(-bound, bound, gen);
      if (b.defined()) b.uniform_(-bound, bound, gen);
    } else if (scheme == "kaiming") {
      w.normal_(0, std::sqrt(2.0 / fan_out), gen);  // fan_out mode, ReLU gain
      if (b.defined()) b.zero_();
    } else if (scheme == "xavier") {
      double bound = std::sqrt(6.0 / (fan_in + fan_out));
      w.uniform_(-bound, bound, gen);
      if (b.defined()) b.zero_();
    } else {
      fail(ErrorKind::kUsage, "unknown init '{}'; valid: default, kaiming, xavier", scheme);
    }
  }
}

}  // namespace trainscope::models
