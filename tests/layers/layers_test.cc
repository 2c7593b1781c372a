// Layer events: any number of subscribers share the hooks of run_layer and
// run_function, forward and backward, each called in subscription order.
#include "trainscope/layers/layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "trainscope/models/models.h"

namespace trainscope::layers {
namespace {

namespace nn = torch::nn;

// Two named module layers and a named functional one.
struct Net : nn::Module {
  nn::Linear fc1{register_module("fc1", nn::Linear(4, 3))};
  nn::Linear fc2{register_module("fc2", nn::Linear(3, 2))};
  const std::string n1 = "fc1", n2 = "fc2", nr = "relu";
  torch::Tensor forward(torch::Tensor x) {
    x = run_layer(n1, fc1, x);
    x = run_function(nr, "ReLU", {x}, [&] { return torch::relu(x); });
    return run_layer(n2, fc2, x);
  }
};

class Recorder : public LayerSubscriber {
 public:
  Recorder(std::string tag, std::vector<std::string>& log, bool backward)
      : tag_(std::move(tag)), log_(log), backward_(backward) {}
  void on_forward(const ForwardEvent& e) override {
    log_.push_back(tag_ + " fwd " + e.name + (e.module ? "" : " " + e.type));
    EXPECT_EQ(current_layer(), nullptr);  // published after the layer's scope closed
    shapes_[e.name] = e.output.sizes().vec();
  }
  void on_backward(const BackwardEvent& e) override {
    log_.push_back(tag_ + " bwd " + e.name);
    EXPECT_EQ(e.grad_output.sizes().vec(), shapes_.at(e.name));
  }
  bool wants_backward() const override { return backward_; }

 private:
  std::string tag_;
  std::vector<std::string>& log_;
  bool backward_;
  std::map<std::string, std::vector<int64_t>> shapes_;
};

TEST(LayerEventsTest, TwoSubscribersAtOnceBothSeeEveryLayerForwardAndBackward) {
  Net net;
  std::vector<std::string> log;
  Recorder profiler_like("A", log, /*backward=*/false), probe_like("B", log, /*backward=*/true);
  {
    Subscription a(profiler_like), b(probe_like);
    net.forward(torch::randn({5, 4})).sum().backward();
  }
  const std::vector<std::string> want = {
      "A fwd fc1", "B fwd fc1", "A fwd relu ReLU", "B fwd relu ReLU", "A fwd fc2", "B fwd fc2",
      // Backward reaches layers in reverse; only B asked for gradients.
      "B bwd fc2", "B bwd relu", "B bwd fc1"};
  EXPECT_EQ(log, want);
  // Without subscriptions nothing is published, and no hook is left behind.
  log.clear();
  net.forward(torch::randn({5, 4})).sum().backward();
  EXPECT_TRUE(log.empty());
}

TEST(LayerEventsTest, EndingASubscriptionStopsItsBackwardEventsAlreadyArmed) {
  Net net;
  std::vector<std::string> log;
  Recorder a("A", log, true), b("B", log, true);
  Subscription keep(a);
  torch::Tensor out;
  {
    Subscription brief(b);
    out = net.forward(torch::randn({2, 4}));
  }
  out.sum().backward();  // b's subscription ended before backward
  EXPECT_EQ(std::count(log.begin(), log.end(), "A bwd fc1"), 1);
  EXPECT_EQ(std::count(log.begin(), log.end(), "B bwd fc1"), 0);
  EXPECT_EQ(std::count(log.begin(), log.end(), "B fwd fc1"), 1);
}

TEST(LayerEventsTest, BuiltInModelsNameEveryLayer) {
  config::ModelConfig mc;
  mc.name = "demo_cnn";
  auto model = models::make_model(mc, {1, 28, 28, 10}, at::detail::createCPUGenerator(1));
  std::vector<std::string> log;
  Recorder r("R", log, false);
  Subscription s(r);
  model->forward(torch::randn({2, 1, 28, 28}));
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front(), "R fwd features.conv1");
}

// A model of the user's that never calls run_layer: instrument() gives its
// layers with parameters events (Conv2d, BatchNorm2d, Linear by addmm and
// by matmul), not its functional steps; the events are the modules' own
// inputs and outputs, and gradients reach a subscriber that wants them.
struct PlainNet : nn::Module {
  nn::Conv2d conv{register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)))};
  nn::BatchNorm2d bn{register_module("bn", nn::BatchNorm2d(4))};
  nn::Linear fc{register_module("fc", nn::Linear(4 * 8 * 8, 5))};
  nn::Linear head{register_module("head", nn::Linear(nn::LinearOptions(5, 3).bias(false)))};
  torch::Tensor conv_out, fc_out;
  torch::Tensor forward(torch::Tensor x) {
    conv_out = conv->forward(x);
    x = torch::relu(bn->forward(conv_out));
    fc_out = fc->forward(x.flatten(1));
    return head->forward(torch::relu(fc_out));
  }
};

TEST(InstrumentTest, AModelOfOnesOwnPublishesItsLayersWithOneCall) {
  auto net = std::make_shared<PlainNet>();
  std::vector<std::string> log;
  Recorder r("r", log, /*backward=*/true);
  {
    Subscription sub(r);
    net->forward(torch::randn({2, 1, 8, 8})).sum().backward();
  }
  EXPECT_TRUE(log.empty()) << "nothing before instrument()";
  instrument(*net);
  struct Outputs : LayerSubscriber {
    std::map<std::string, torch::Tensor> out;
    std::map<std::string, const nn::Module*> module;
    void on_forward(const ForwardEvent& e) override {
      out[e.name] = e.output;
      module[e.name] = e.module;
      EXPECT_EQ(e.inputs.size(), 1u) << e.name << ": the input, not the weights";
    }
  } outputs;
  {
    Subscription sub(r), sub2(outputs);
    net->forward(torch::randn({2, 1, 8, 8})).sum().backward();
  }
  EXPECT_EQ(log, (std::vector<std::string>{"r fwd conv", "r fwd bn", "r fwd fc", "r fwd head",
                                           "r bwd head", "r bwd fc", "r bwd bn", "r bwd conv"}));
  EXPECT_TRUE(outputs.out.at("conv").equal(net->conv_out));
  EXPECT_TRUE(outputs.out.at("fc").equal(net->fc_out));
  EXPECT_EQ(outputs.module.at("bn"), net->bn.get());
  uninstrument(*net);
}

// While a Watch is alive an instrumented layer is the current layer of its
// operator (what the profiler charges time to); a model destroyed without
// uninstrument() names nothing afterwards.
TEST(InstrumentTest, AWatchNamesTheCurrentLayerAndADeadModelNamesNothing) {
  struct Seen : LayerSubscriber {
    std::vector<std::string> names;
    void on_forward(const ForwardEvent& e) override { names.push_back(e.name); }
  } seen;
  {
    auto gone = std::make_shared<PlainNet>();
    instrument(*gone);
  }
  auto net = std::make_shared<PlainNet>();  // perhaps where the dead one was
  {
    Subscription sub(seen);
    net->forward(torch::randn({1, 1, 8, 8}));
  }
  EXPECT_TRUE(seen.names.empty()) << seen.names.size();
  instrument(*net);
  Watch watch;
  EXPECT_EQ(current_layer(), nullptr);
  net->forward(torch::randn({1, 1, 8, 8}));
  EXPECT_EQ(current_layer(), nullptr) << "restored after each layer";
  uninstrument(*net);
}

}  // namespace
}  // namespace trainscope::layers
