// Cost of one resource sample (process tree, system, GPUs when present,
// energy counters, and logging ~20 metric points). At 1 Hz the sampler's
// share of one core is this time divided by one second.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "trainscope/monitor/sampler.h"

namespace monitor = trainscope::monitor;
using namespace trainscope::store;

static void BM_SampleOnce(benchmark::State& state) {
  std::random_device rd;
  auto dir =
      std::filesystem::temp_directory_path() / ("trainscope-bench-mon-" + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  {
    StoreOptions o;
    o.uri = "sqlite:" + (dir / "b.db").string();
    std::shared_ptr<Store> store = Store::open(o);
    auto rec = RunRecorder::start(store, {});
    monitor::SamplerOptions so;
    so.interval_s = 3600;  // the thread stays idle; the loop below samples
    monitor::ResourceSampler sampler(*rec, so);
    for (auto _ : state) sampler.sample_once();
    sampler.stop();
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SampleOnce)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
