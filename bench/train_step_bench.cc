// Training-step time of trainscope's C++ engine on real Fashion-MNIST
// batches. bench/train_vs_python.sh runs this and the same step in Debian's
// Python PyTorch (bench/py_train_step.py) in one go and prints the ratios.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdlib>
#include <thread>

#include "trainscope/train/data.h"
#include "trainscope/train/models.h"
#include "trainscope/train/optim.h"
#include "trainscope/train/seeds.h"

using namespace trainscope::train;

namespace {

// The step the trainer runs: zero_grad, forward, cross-entropy, backward,
// optimizer step, and reading the loss back (as every logged step does).
void BM_TrainStep(benchmark::State& state, const char* model_name, int64_t batch) {
  // Both sides pin the same intra-op thread count (Debian's libtorch starts
  // with 1 here whatever the core count).
  const char* env = std::getenv("TRAINSCOPE_BENCH_THREADS");
  torch::set_num_threads(env ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency()));
  Config c;
  c.model.name = model_name;
  c.data.train_subset = batch * 64;
  DataSplits data = load_data(c.data, 1);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (int64_t b = 0; b < 64; ++b) {
    auto idx = torch::arange(b * batch, (b + 1) * batch);
    batches.emplace_back(to_input(data.train.images.index_select(0, idx), data.mean, data.std,
                                  torch::kFloat32),
                         data.train.labels.index_select(0, idx));
  }
  auto model = make_model(c.model, {1, 28, 28, 10}, at::detail::createCPUGenerator(1));
  init_weights(*model, "default", at::detail::createCPUGenerator(2));
  auto opt = make_optimizer(c.optimizer, model->parameters());  // Adam, lr 1e-3
  model->train();
  size_t i = 0;
  for (auto _ : state) {
    const auto& [x, y] = batches[i++ % batches.size()];
    opt->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
    benchmark::DoNotOptimize(loss.item<double>());
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["threads"] = torch::get_num_threads();
}

BENCHMARK_CAPTURE(BM_TrainStep, mlp_b64, "mlp", 64)->Unit(benchmark::kMicrosecond)
    ->MinTime(3.0)->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, demo_cnn_b128, "demo_cnn", 128)->Unit(benchmark::kMicrosecond)
    ->MinTime(3.0)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
