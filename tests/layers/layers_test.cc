// Layer events: any number of subscribers share the hooks of run_layer and
// run_function, forward and backward, each called in subscription order.
#include "trainscope/layers/layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainscope/train/models.h"

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
  train::ModelConfig mc;
  mc.name = "demo_cnn";
  auto model = train::make_model(mc, {1, 28, 28, 10}, at::detail::createCPUGenerator(1));
  std::vector<std::string> log;
  Recorder r("R", log, false);
  Subscription s(r);
  model->forward(torch::randn({2, 1, 28, 28}));
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front(), "R fwd features.conv1");
}

}  // namespace
}  // namespace trainscope::layers
