// Trains a model of your own through trainscope's C++ API and records it in
// the store: params, step and epoch metrics, checkpoints, all reachable with
// `trainscope runs show`. One line (layers::instrument) gives the model the
// layer events the per-layer profile and the probes need.
//
//   build/examples/custom_model [sqlite:PATH]
#include <torch/torch.h>
#include <trainscope/core/error.h>
#include <trainscope/layers/layers.h>
#include <trainscope/train/trainer.h>

#include <cstdio>

namespace ts = trainscope;

// Any libtorch model: subclass Classifier and implement forward().
class TinyNet : public ts::models::Classifier {
 public:
  TinyNet() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)));
    fc = register_module("fc", torch::nn::Linear(8 * 14 * 14, 10));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(conv->forward(x)), 2);
    return fc->forward(x.flatten(1));
  }

 private:
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc{nullptr};
};

// Anything around the loop is an observer of its events (events.h).
struct PrintEpochs : ts::instrument::TrainObserver {
  void on_epoch_end(const ts::instrument::RunContext&,
                    const ts::instrument::EpochInfo& e) override {
    std::printf("epoch %lld: test accuracy %.4f\n", static_cast<long long>(e.epoch + 1),
                e.test.accuracy);
  }
};

int main(int argc, char** argv) {
  try {
    ts::store::StoreOptions so;
    so.uri = argc > 1 ? argv[1] : "";
    std::shared_ptr<ts::store::Store> store = ts::store::Store::open(so);

    // Start from defaults and change what you need, as `--set` would.
    ts::config::Config config = ts::config::parse_config(
        "run: {experiment: examples}\n"
        "data: {dataset: fashion-mnist, train_subset: 10000, test_subset: 2000}\n"
        "optimizer: {name: adam, lr: 0.002}\n"
        "train: {epochs: 1}\n"
        "profile: {enabled: true}\n"
        "probes: economy\n",
        {});
    ts::train::TrainOptions options;
    options.name = "custom-tinynet";
    ts::train::Trainer trainer(config, store, options);
    auto model = std::make_shared<TinyNet>();
    ts::layers::instrument(*model);  // its conv and fc layers get profiled and probed
    trainer.set_model(model);
    trainer.add_observer(std::make_shared<PrintEpochs>());
    auto result = trainer.run();
    std::printf("recorded run %s (%s)\n", result.run_uuid.c_str(),
                ts::store::to_string(result.status));
    return 0;
  } catch (const ts::core::Error& e) {
    std::fprintf(stderr, "custom_model: %s\n", e.what());
    return 1;
  }
}
