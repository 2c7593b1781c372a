#include <torch/torch.h>

#include "trainscope/profile/profiler.h"

namespace nn = torch::nn;

namespace trainscope::profile {

double layer_flops(const nn::Module& m, const std::vector<int64_t>& in,
                   const std::vector<int64_t>& out, std::string* type) {
  std::string t;
  int64_t cin = 0, cout = 0, kernel = 0, groups = 1;
  if (auto* d = dynamic_cast<const DescribedModule*>(&m)) {
    const auto& st = d->structure();
    t = st.type, cin = st.in_channels, cout = st.out_channels, kernel = st.kernel_elems;
    groups = st.groups;
  } else if (auto* c = dynamic_cast<const nn::Conv2dImpl*>(&m)) {
    const auto& o = c->options;
    t = "Conv2d", cin = o.in_channels(), cout = o.out_channels(), groups = o.groups();
    kernel = o.kernel_size()->at(0) * o.kernel_size()->at(1);
  } else if (auto* l = dynamic_cast<const nn::LinearImpl*>(&m)) {
    t = "Linear", cin = l->options.in_features(), cout = l->options.out_features();
  } else if (dynamic_cast<const nn::BatchNorm2dImpl*>(&m)) {
    t = "BatchNorm2d";
  } else if (dynamic_cast<const nn::ReLUImpl*>(&m)) {
    t = "ReLU";
  } else if (auto* p = dynamic_cast<const nn::MaxPool2dImpl*>(&m)) {
    t = "MaxPool2d", kernel = p->options.kernel_size()->at(0) * p->options.kernel_size()->at(1);
  } else if (dynamic_cast<const nn::FlattenImpl*>(&m)) {
    t = "Flatten";
  } else {
    t = m.name();
    if (auto colon = t.rfind("::"); colon != std::string::npos) t = t.substr(colon + 2);
    if (t.size() > 4 && t.compare(t.size() - 4, 4, "Impl") == 0) t.resize(t.size() - 4);
  }
  if (type) *type = t;
  return type_flops(t, in, out, cin, cout, kernel, groups);
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
  if (auto* d = dynamic_cast<const DescribedModule*>(&m)) {
    const auto& st = d->structure();
    li.in_channels = st.in_channels, li.out_channels = st.out_channels, li.kernel = st.kernel;
    li.stride = st.stride, li.groups = st.groups;
  } else if (auto* c = dynamic_cast<const nn::Conv2dImpl*>(&m)) {
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
