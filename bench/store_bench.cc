// Store and recorder throughput. Run with `make bench`; figures are recorded
// in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace fs = std::filesystem;

using namespace trainscope::store;

namespace {

fs::path fresh_dir(const std::string& tag) {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() / ("trainscope-bench-" + tag + std::to_string(rd()));
  fs::create_directories(p);
  return p;
}

std::shared_ptr<Store> open_at(const fs::path& p) {
  StoreOptions o;
  o.uri = "sqlite:" + p.string();
  return Store::open(o);
}

// Sustained ingestion: N points over 10 keys logged as fast as possible and
// committed (the timer includes the final flush).
void BM_IngestPoints(benchmark::State& state) {
  const int64_t n = state.range(0);
  fs::path dir = fresh_dir("ingest");
  auto store = open_at(dir / "b.db");
  const std::string keys[10] = {"loss", "acc", "lr", "grad_norm", "k4",
                                "k5",   "k6",  "k7", "k8",        "k9"};
  for (auto _ : state) {
    auto rec = RunRecorder::start(store, {});
    for (int64_t i = 0; i < n; ++i) rec->log_metric(keys[i % 10], static_cast<double>(i), i / 10);
    rec->end();
  }
  state.SetItemsProcessed(state.iterations() * n);
  fs::remove_all(dir);
}
BENCHMARK(BM_IngestPoints)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// Cost of one log call on the calling thread, with the writer running.
void BM_LogCall(benchmark::State& state) {
  fs::path dir = fresh_dir("log");
  auto store = open_at(dir / "b.db");
  auto rec = RunRecorder::start(store, {});
  int64_t i = 0;
  for (auto _ : state) {
    rec->log_metric("train/loss", 0.5, i++);
  }
  rec->end();
  fs::remove_all(dir);
}
BENCHMARK(BM_LogCall)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kNanosecond);

// Reading one 1M-point series back.
void BM_ReadSeries1M(benchmark::State& state) {
  fs::path dir = fresh_dir("read");
  auto store = open_at(dir / "b.db");
  RunInfo r = store->create_run({});
  std::vector<MetricPoint> pts(1'000'000);
  for (int64_t i = 0; i < 1'000'000; ++i) pts[i] = {i, 1.7e9 + i * 1e-3, std::sin(i)};
  for (size_t off = 0; off < pts.size(); off += 100'000)
    store->append_metrics(r.uuid, {{"loss", {pts.begin() + off, pts.begin() + off + 100'000}}});
  for (auto _ : state) {
    auto got = store->metric(r.uuid, "loss");
    if (got.size() != pts.size()) state.SkipWithError("wrong size");
    benchmark::DoNotOptimize(got.data());
  }
  state.SetItemsProcessed(state.iterations() * 1'000'000);
  fs::remove_all(dir);
}
BENCHMARK(BM_ReadSeries1M)->Unit(benchmark::kMillisecond);

// Listing 10,000 runs: the store query, then the whole `trainscope runs list
// --all` command (process start, query, formatting) with output discarded.
struct TenThousandRuns {
  fs::path dir = fresh_dir("list");
  std::shared_ptr<Store> store = open_at(dir / "b.db");
  TenThousandRuns() {
    for (int i = 0; i < 10'000; ++i) {
      NewRun nr;
      nr.experiment = "exp" + std::to_string(i % 7);
      nr.name = "run-" + std::to_string(i);
      nr.status = RunStatus::kFinished;
      store->create_run(nr);
    }
  }
  ~TenThousandRuns() { fs::remove_all(dir); }
};
TenThousandRuns& ten_thousand() {
  static TenThousandRuns runs;
  return runs;
}

void BM_ListRuns10k_Store(benchmark::State& state) {
  auto& fx = ten_thousand();
  for (auto _ : state) {
    auto runs = fx.store->list_runs({});
    if (runs.size() != 10'000) state.SkipWithError("wrong count");
  }
}
BENCHMARK(BM_ListRuns10k_Store)->Unit(benchmark::kMillisecond);

void BM_ListRuns10k_Cli(benchmark::State& state) {
  auto& fx = ten_thousand();
  std::string cmd = std::string(TS_CLI_BIN) + " --store sqlite:" + (fx.dir / "b.db").string() +
                    " runs list --all > /dev/null";
  for (auto _ : state) {
    if (std::system(cmd.c_str()) != 0) state.SkipWithError("runs list failed");
  }
}
BENCHMARK(BM_ListRuns10k_Cli)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
