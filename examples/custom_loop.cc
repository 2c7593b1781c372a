// A training loop written by hand in plain libtorch (no train::Trainer),
// with a model of its own (a torch::nn::Module, not one of trainscope's),
// that still gets every capability: metrics, fingerprints (so that
// `trainscope diff` compares two runs), the per-layer profile and the
// standard probes. Two lines join trainscope: instrument(*model) gives the
// model layer events, and an instrument::Run records the run and is told
// what the loop does.
//
//   build/examples/custom_loop [sqlite:PATH] [RUN-NAME] [SEED]
//   trainscope runs show RUN-NAME; trainscope profile show RUN-NAME
//   trainscope probes RUN-NAME; trainscope diff RUN-A RUN-B
#include <torch/torch.h>
#include <trainscope/config/config.h>
#include <trainscope/core/error.h>
#include <trainscope/data/data.h>
#include <trainscope/instrument/run.h>
#include <trainscope/layers/layers.h>

#include <cstdio>
#include <cstdlib>

namespace ts = trainscope;
using ts::instrument::StepPhase;

// The user's model: any torch::nn::Module.
struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(8))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).padding(1)))),
        fc1(register_module("fc1", torch::nn::Linear(16 * 7 * 7, 64))),
        fc2(register_module("fc2", torch::nn::Linear(64, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(bn1->forward(conv1->forward(x))), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return fc2->forward(torch::relu(fc1->forward(x.flatten(1))));
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Net);

// What the instruments may ask of the loop besides its events: the model,
// its forward pass and some inputs (the probes' layer list and reference
// batch, the profiler's layer facts).
class LoopSource : public ts::instrument::Source {
 public:
  LoopSource(Net model, torch::Tensor train_x, torch::Tensor test_x)
      : model_(std::move(model)), train_x_(std::move(train_x)), test_x_(std::move(test_x)) {}
  torch::nn::Module& model() override { return *model_; }
  std::string model_name() const override { return "loop-net"; }
  torch::Tensor forward(const torch::Tensor& x) override { return model_->forward(x); }
  torch::Tensor train_inputs(int64_t n) override { return train_x_.narrow(0, 0, n); }
  torch::Tensor test_inputs(int64_t n) override {
    return test_x_.narrow(0, 0, std::min(n, test_x_.size(0)));
  }

 private:
  Net model_;
  torch::Tensor train_x_, test_x_;
};

torch::Tensor pixels(const torch::Tensor& u8) {
  return (u8.to(torch::kFloat) / 255.0 - 0.286) / 0.353;
}

// Test loss and accuracy, as the loop's own evaluation.
ts::instrument::EvalResult evaluate(Net& model, const torch::Tensor& x, const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto out = model->forward(x);
  model->train();
  ts::instrument::EvalResult r;
  r.samples = y.size(0);
  r.loss = torch::nn::functional::cross_entropy(out, y).item<double>();
  r.accuracy = out.argmax(1).eq(y).to(torch::kDouble).mean().item<double>();
  return r;
}

int main(int argc, char** argv) {
  try {
    std::shared_ptr<ts::store::Store> store =
        ts::store::Store::open({.uri = argc > 1 ? argv[1] : ""});
    const std::string name = argc > 2 ? argv[2] : "custom-loop";
    const int64_t seed = argc > 3 ? std::atoll(argv[3]) : 1;
    torch::manual_seed(seed);
    torch::set_num_threads(1);

    const std::string dir = ts::data::kFashionMnistDir;
    auto train = ts::data::read_idx(dir + "/train-images-idx3-ubyte.gz",
                                    dir + "/train-labels-idx1-ubyte.gz");
    auto test =
        ts::data::read_idx(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz");
    const int64_t n = 2048, batch = 64, epochs = 2;
    torch::Tensor x = pixels(train.images.narrow(0, 0, n)), y = train.labels.narrow(0, 0, n);
    torch::Tensor tx = pixels(test.images.narrow(0, 0, 500)), ty = test.labels.narrow(0, 0, 500);

    Net model;
    ts::layers::instrument(*model);  // layer events for a model of one's own
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    LoopSource source(model, x, tx);
    // The instruments this run gets: every unit the config turns on.
    auto config = ts::config::parse_config(
        "run: {experiment: examples}\n"
        "fingerprint: {every_steps: 1}\n"
        "profile: {enabled: true, warmup_steps: 2, every: 4}\n"
        "probes: {preset: standard, every: 8}\n",
        {"seeds.master=" + std::to_string(seed)});
    ts::instrument::RunOptions options;
    options.name = name;
    ts::instrument::Run run(store, config, source, options);
    const int64_t batches = n / batch;
    run.begin(batches * epochs, batches);
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      run.epoch_begin();
      torch::Tensor order = torch::randperm(n);
      for (int64_t b = 0; b < batches; ++b) {
        run.batch_begin();
        run.phase(StepPhase::kData);
        auto index = order.narrow(0, b * batch, batch);
        auto step = run.next_step(x.index_select(0, index), y.index_select(0, index), 0.05);
        run.phase(StepPhase::kZeroGrad);
        opt.zero_grad();
        run.phase(StepPhase::kForward);
        step.output = model->forward(step.inputs);
        run.phase(StepPhase::kLoss);
        step.loss = torch::nn::functional::cross_entropy(step.output, step.targets);
        run.after_forward(step);
        run.phase(StepPhase::kBackward);
        step.loss.backward();
        run.after_backward(step);
        run.phase(StepPhase::kUpdate);
        opt.step();
        run.phase(StepPhase::kRecording);
        run.after_step(step);
        run.batch_end(step);
      }
      const auto r = evaluate(model, tx, ty);
      run.evaluation_end({"test", epoch + 1, r});
      run.epoch_end({.test = r});
    }
    auto result = run.end();
    std::printf("recorded run %s: %lld steps\n", result.run_uuid.c_str(),
                static_cast<long long>(result.steps));
    return 0;
  } catch (const ts::core::Error& e) {
    std::fprintf(stderr, "custom_loop: %s\n", e.what());
    return 1;
  }
}
