// Training-step time of trainscope's C++ engine on real Fashion-MNIST
// batches. bench/train_vs_python.sh runs this and the same step in Debian's
// Python PyTorch (bench/py_train_step.py) in one go and prints the ratios.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdlib>
#include <thread>

#include "trainscope/config/seeds.h"
#include "trainscope/data/data.h"
#include "trainscope/fingerprint/fingerprint.h"
#include "trainscope/models/models.h"
#include "trainscope/optim/optim.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

using namespace trainscope::data;
using namespace trainscope::models;
using namespace trainscope::optim;

namespace {

// The step the trainer runs: zero_grad, forward, cross-entropy, backward,
// optimizer step, and reading the loss back (as every logged step does).
void BM_TrainStep(benchmark::State& state, const char* model_name, int64_t batch) {
  // Both sides pin the same intra-op thread count (Debian's libtorch starts
  // with 1 here whatever the core count).
  const char* env = std::getenv("TRAINSCOPE_BENCH_THREADS");
  torch::set_num_threads(env ? std::atoi(env)
                             : static_cast<int>(std::thread::hardware_concurrency()));
  trainscope::config::Config c;
  c.model.name = model_name;
  c.data.train_subset = batch * 64;
  DataSplits data = load_data(c.data, 1);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (int64_t b = 0; b < 64; ++b) {
    auto idx = torch::arange(b * batch, (b + 1) * batch);
    batches.emplace_back(
        to_input(data.train.images.index_select(0, idx), data.mean, data.std, torch::kFloat32),
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

BENCHMARK_CAPTURE(BM_TrainStep, mlp_b64, "mlp", 64)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(3.0)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, demo_cnn_b128, "demo_cnn", 128)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(3.0)
    ->UseRealTime();

// Hashing every parameter, buffer and the loss once: the per-step cost of
// fingerprint.every_steps: 1. Compare with BM_TrainStep of the same model.
void BM_Fingerprint(benchmark::State& state, const char* model_name) {
  trainscope::config::ModelConfig mc;
  mc.name = model_name;
  auto model = make_model(mc, {1, 28, 28, 10}, at::detail::createCPUGenerator(1));
  auto tensors = trainscope::fingerprint::tensors(*model);
  auto loss = torch::tensor(0.5f);
  int64_t bytes = 0;
  for (const auto& [n, t] : tensors) bytes += t.numel() * t.element_size();
  for (auto _ : state) {
    std::vector<uint64_t> hashes;
    hashes.reserve(tensors.size() + 1);
    for (const auto& [n, t] : tensors) hashes.push_back(trainscope::fingerprint::tensor_hash(t));
    hashes.push_back(trainscope::fingerprint::tensor_hash(loss));
    benchmark::DoNotOptimize(hashes.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["tensors"] = static_cast<double>(tensors.size());
}
BENCHMARK_CAPTURE(BM_Fingerprint, demo_cnn, "demo_cnn")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fingerprint, vgg11_seed, "vgg11_seed")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TrainStep, vgg11_seed_b64, "vgg11_seed", 64)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(5.0)
    ->UseRealTime();

// The same step with the profiler attached every `every`-th step (0: never),
// as the trainer does it. Compare the mean step time with every = 0.
void BM_ProfiledStep(benchmark::State& state, const char* model_name, int64_t batch, int every) {
  const char* env = std::getenv("TRAINSCOPE_BENCH_THREADS");
  torch::set_num_threads(env ? std::atoi(env) : 1);
  trainscope::config::Config c;
  c.model.name = model_name;
  c.data.train_subset = batch * 16;
  DataSplits data = load_data(c.data, 1);
  auto x = to_input(data.train.images.narrow(0, 0, batch), data.mean, data.std, torch::kFloat32);
  auto y = data.train.labels.narrow(0, 0, batch);
  auto model = make_model(c.model, {1, 28, 28, 10}, at::detail::createCPUGenerator(1));
  auto opt = make_optimizer(c.optimizer, model->parameters());
  trainscope::profile::IterationProfiler profiler(*model, false);
  using trainscope::profile::Phase;
  int64_t step = 0;
  for (auto _ : state) {
    const bool on = every > 0 && ++step % every == 0;
    if (on) profiler.begin(step, false), profiler.phase(Phase::kZeroGrad);
    opt->zero_grad();
    if (on) profiler.phase(Phase::kForward);
    auto out = model->forward(x);
    if (on) profiler.phase(Phase::kLoss);
    auto loss = torch::nn::functional::cross_entropy(out, y);
    if (on) profiler.phase(Phase::kBackward);
    loss.backward();
    if (on) profiler.phase(Phase::kUpdate);
    opt->step();
    if (on) profiler.phase(Phase::kRecording);
    benchmark::DoNotOptimize(loss.item<double>());
    if (on) benchmark::DoNotOptimize(profiler.end().wall_us);
  }
}
BENCHMARK_CAPTURE(BM_ProfiledStep, demo_cnn_off, "demo_cnn", 128, 0)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(8.0);
BENCHMARK_CAPTURE(BM_ProfiledStep, demo_cnn_every10, "demo_cnn", 128, 10)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(8.0);
BENCHMARK_CAPTURE(BM_ProfiledStep, demo_cnn_every1, "demo_cnn", 128, 1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(8.0);

}  // namespace

BENCHMARK_MAIN();
