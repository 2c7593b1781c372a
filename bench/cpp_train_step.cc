// The C++ twin of bench/py_train_step.py: the same training step through
// trainscope's models and optimizer, timed the same way.
//
//   build/bench/cpp_train_step MODEL SECONDS THREADS   (MODEL: mlp_b64 | demo_cnn_b128)
//
// Prints "bench: step_us=<mean>"; bench/train_vs_python.sh runs both twins
// interleaved through bench/interleave.py.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trainscope/data/data.h"
#include "trainscope/models/models.h"
#include "trainscope/optim/optim.h"

using namespace trainscope::data;
using namespace trainscope::models;
using namespace trainscope::optim;

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "mlp_b64";
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  torch::set_num_threads(argc > 3 ? std::atoi(argv[3]) : 1);
  const bool mlp = name == "mlp_b64";
  const int64_t batch = mlp ? 64 : 128;
  trainscope::config::Config c;
  c.model.name = mlp ? "mlp" : "demo_cnn";
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
  auto step = [&](size_t i) {
    const auto& [x, y] = batches[i % batches.size()];
    opt->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
    return loss.item<double>();
  };
  for (size_t i = 0; i < 20; ++i) step(i);  // warm-up, as the Python side
  using Clock = std::chrono::steady_clock;
  size_t steps = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    step(steps++);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  std::printf("bench: step_us=%.2f steps=%zu threads=%d\n", elapsed / steps * 1e6, steps,
              torch::get_num_threads());
  return 0;
}
