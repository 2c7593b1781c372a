// The all-reduce of data-parallel training on its own (issue 32,
// docs/scale-out.md): P local ranks joined as `train --nproc P` joins them
// (dist::launch, a TCPStore on loopback, Gloo), all-reducing float32
// buffers of each size; rank 0 prints one JSON line per size with the
// median and spread of the all-reduce time. bench/allreduce.py fits the
// ring all-reduce cost model to these lines.
//   allreduce_bench P [ITERS (20)] [SIZES in bytes, comma-separated]
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/launch.h"
#include "trainscope/dist/world.h"

namespace {

using trainscope::dist::World;

std::vector<int64_t> sizes_of(const std::string& list) {
  std::vector<int64_t> out;
  for (const auto& item : trainscope::core::split_list(list)) out.push_back(std::stoll(item));
  return out;
}

// The time of `iters` all-reduces of `bytes`, each after a one-float
// all-reduce that lines the ranks up, in microseconds.
std::vector<double> time_size(World& world, int64_t bytes, int iters) {
  std::vector<at::Tensor> buf = {torch::ones({std::max<int64_t>(1, bytes / 4)})};
  std::vector<at::Tensor> sync = {torch::ones({1})};
  std::vector<double> us;
  for (int i = -3; i < iters; ++i) {  // three to warm up
    world.allreduce_sum(sync);
    const double t0 = trainscope::core::monotonic_now();
    world.allreduce_sum(buf);
    if (i >= 0) us.push_back((trainscope::core::monotonic_now() - t0) * 1e6);
  }
  std::sort(us.begin(), us.end());
  return us;
}

int rank_main(const trainscope::dist::Rendezvous& r, int iters, const std::string& sizes) {
  torch::set_num_threads(1);
  trainscope::dist::DistConfig c;
  c.timeout_s = 120;
  World world(r, c);
  for (const int64_t bytes : sizes_of(sizes)) {
    const auto us = time_size(world, bytes, iters);
    if (world.rank() == 0)
      std::printf(
          "{\"ranks\": %d, \"bytes\": %lld, \"median_us\": %.2f, \"min_us\": %.2f, \"max_us\": "
          "%.2f}\n",
          world.size(), static_cast<long long>(bytes), us[us.size() / 2], us.front(), us.back());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: allreduce_bench P [ITERS] [SIZES]\n");
    return 2;
  }
  const int nproc = std::atoi(argv[1]);
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::string sizes =
      argc > 3 ? argv[3] : "1024,4096,16384,65536,262144,1048576,4194304,16777216";
  try {
    if (const auto r = trainscope::dist::rendezvous_from_env(nproc))
      return rank_main(*r, iters, sizes);
    trainscope::dist::LaunchOptions o;
    o.nproc = nproc;
    for (int r = 0; r < nproc; ++r)
      o.argv.push_back({"/proc/self/exe", argv[1], std::to_string(iters), sizes});
    return trainscope::dist::launch(o).exit_code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
}
