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
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

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

// Hashing every parameter, buffer and the loss once: the per-step cost of
// fingerprint.every_steps: 1. Compare with BM_TrainStep of the same model.
void BM_Fingerprint(benchmark::State& state, const char* model_name) {
  ModelConfig mc;
  mc.name = model_name;
  auto model = make_model(mc, {1, 28, 28, 10}, at::detail::createCPUGenerator(1));
  auto tensors = fingerprint_tensors(*model);
  auto loss = torch::tensor(0.5f);
  int64_t bytes = 0;
  for (const auto& [n, t] : tensors) bytes += t.numel() * t.element_size();
  for (auto _ : state) {
    std::vector<uint64_t> hashes;
    hashes.reserve(tensors.size() + 1);
    for (const auto& [n, t] : tensors) hashes.push_back(tensor_hash(t));
    hashes.push_back(tensor_hash(loss));
    benchmark::DoNotOptimize(hashes.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["tensors"] = static_cast<double>(tensors.size());
}
BENCHMARK_CAPTURE(BM_Fingerprint, demo_cnn, "demo_cnn")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fingerprint, vgg11_seed, "vgg11_seed")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TrainStep, vgg11_seed_b64, "vgg11_seed", 64)->Unit(benchmark::kMillisecond)
    ->MinTime(5.0)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
