#include <torch/torch.h>

#include "trainscope/profile/profiler.h"

namespace nn = torch::nn;

namespace trainscope::profile {
namespace {
double numel(const std::vector<int64_t>& s) {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return s.empty() ? 0 : n;
}
}  // namespace

double layer_flops(const nn::Module& m, const std::vector<int64_t>& in,
                   const std::vector<int64_t>& out, std::string* type) {
  auto set = [&](const char* t) {
    if (type) *type = t;
  };
  if (auto* c = dynamic_cast<const nn::Conv2dImpl*>(&m)) {
    set("Conv2d");
    const auto& o = c->options;
    double k = static_cast<double>(o.kernel_size()->at(0) * o.kernel_size()->at(1));
    double cin = static_cast<double>(o.in_channels()) / static_cast<double>(o.groups());
    return 2.0 * cin * k * static_cast<double>(o.out_channels()) * numel(out) /
           static_cast<double>(o.out_channels());
  }
  if (auto* l = dynamic_cast<const nn::LinearImpl*>(&m)) {
    set("Linear");
    double n = numel(in) / static_cast<double>(l->options.in_features());
    return 2.0 * static_cast<double>(l->options.in_features()) *
           static_cast<double>(l->options.out_features()) * n;
  }
  if (dynamic_cast<const nn::BatchNorm2dImpl*>(&m)) {
    set("BatchNorm2d");
    return 4.0 * numel(out);
  }
  if (dynamic_cast<const nn::ReLUImpl*>(&m)) {
    set("ReLU");
    return numel(out);
  }
  if (auto* p = dynamic_cast<const nn::MaxPool2dImpl*>(&m)) {
    set("MaxPool2d");
    return static_cast<double>(p->options.kernel_size()->at(0) * p->options.kernel_size()->at(1)) *
           numel(out);
  }
  if (dynamic_cast<const nn::FlattenImpl*>(&m)) {
    set("Flatten");
    return 0;
  }
  std::string name = m.name();
  auto colon = name.rfind("::");
  std::string t = colon == std::string::npos ? name : name.substr(colon + 2);
  if (t.size() > 4 && t.compare(t.size() - 4, 4, "Impl") == 0) t.resize(t.size() - 4);
  if (type) *type = t;
  if (t == "StreamDropout") return numel(out);
  return 0;  // padding, containers: data movement only
}

double function_flops(const std::string& type, const std::vector<torch::Tensor>& ins,
                      const torch::Tensor& out) {
  const double n_out = static_cast<double>(out.numel());
  if (type == "Add") return n_out * static_cast<double>(ins.size() > 1 ? ins.size() - 1 : 1);
  if (type == "ReLU") return n_out;
  if (type == "AdaptiveAvgPool2d") return ins.empty() ? 0 : static_cast<double>(ins[0].numel());
  return 0;
}

namespace {

// Shapes, parameters, FLOPs and bytes of a module layer's forward pass.
void describe_module(const nn::Module& m, LayerInfo& li) {
  li.flops = layer_flops(m, li.in_shape, li.out_shape, &li.type);
  for (const auto& p : m.parameters()) {
    li.params += p.numel();
    ++li.param_tensors;
    li.param_bytes += static_cast<double>(p.numel() * p.element_size());
  }
  li.bytes += li.param_bytes;
  if (auto* c = dynamic_cast<const nn::Conv2dImpl*>(&m)) {
    li.in_channels = c->options.in_channels();
    li.out_channels = c->options.out_channels();
    li.kernel = c->options.kernel_size()->at(0);
    li.stride = c->options.stride()->at(0);
    li.groups = c->options.groups();
  } else if (auto* l = dynamic_cast<const nn::LinearImpl*>(&m)) {
    li.in_channels = l->options.in_features();
    li.out_channels = l->options.out_features();
  }
}

// Collects every layer's facts from the forward events of one pass.
class LayerDescriber : public layers::LayerSubscriber {
 public:
  void on_forward(const layers::ForwardEvent& e) override {
    // A layer run twice keeps its first shapes.
    if (index_.count(e.name) || e.inputs.empty()) return;
    LayerInfo li;
    li.name = e.name;
    li.in_shape = e.inputs[0].sizes().vec();
    li.out_shape = e.output.sizes().vec();
    double in_bytes = 0;
    for (const auto& t : e.inputs) in_bytes += static_cast<double>(t.numel() * t.element_size());
    li.activation_bytes = static_cast<double>(e.output.numel() * e.output.element_size());
    li.bytes = in_bytes + li.activation_bytes;
    if (e.module) {
      describe_module(*e.module, li);
    } else {
      li.type = e.type;
      li.flops = function_flops(e.type, e.inputs, e.output);
    }
    index_[e.name] = layers_.size();
    layers_.push_back(std::move(li));
  }
  std::vector<LayerInfo> take() { return std::move(layers_); }

 private:
  std::vector<LayerInfo> layers_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::vector<LayerInfo> describe_layers(nn::Module& model,
                                       const std::function<torch::Tensor(torch::Tensor)>& forward,
                                       const torch::Tensor& x) {
  LayerDescriber describer;
  {
    layers::Subscription sub(describer);
    torch::NoGradGuard ng;
    bool was = model.is_training();
    model.eval();
    forward(x);
    model.train(was);
  }
  std::vector<LayerInfo> out = describer.take();
  mark_input_gradients(out);
  return out;
}

}  // namespace trainscope::profile
