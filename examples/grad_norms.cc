// A custom observer on a model of your own: the gradient norm of every
// parameter every 10 steps, recorded as metrics grad_norm/<parameter>.
//   build/examples/grad_norms [sqlite:PATH] && trainscope metrics grad-norms
#include <torch/torch.h>
#include <trainscope/train/trainer.h>

#include <cstdio>

namespace ts = trainscope;

struct TinyNet : ts::models::Classifier {
  torch::nn::Linear fc1{register_module("fc1", torch::nn::Linear(784, 64))};
  torch::nn::Linear fc2{register_module("fc2", torch::nn::Linear(64, 10))};
  torch::Tensor forward(torch::Tensor x) override { return fc2(torch::relu(fc1(x.flatten(1)))); }
};

struct GradNorms : ts::instrument::TrainObserver {
  void on_after_backward(const ts::instrument::RunContext& ctx,
                         const ts::instrument::Step& step) override {
    if (step.number % 10 != 0) return;
    for (const auto& p : ctx.model.named_parameters())
      ctx.run.log_metric("grad_norm/" + p.key(), p.value().grad().norm().item<double>(),
                         step.number);
  }
};

int main(int argc, char** argv) {
  std::shared_ptr<ts::store::Store> store =
      ts::store::Store::open({.uri = argc > 1 ? argv[1] : ""});
  auto config = ts::config::parse_config(
      "data: {dataset: fashion-mnist, train_subset: 2560, test_subset: 500}\n", {"train.epochs=1"});
  ts::train::TrainOptions options;
  options.name = "grad-norms";
  ts::train::Trainer trainer(config, store, options);
  trainer.set_model(std::make_shared<TinyNet>());
  trainer.add_observer(std::make_shared<GradNorms>());
  auto result = trainer.run();
  std::printf("recorded run %s: %lld steps, grad_norm/* every 10 steps\n", result.run_uuid.c_str(),
              static_cast<long long>(result.steps));
}
