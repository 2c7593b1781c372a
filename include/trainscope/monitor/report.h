// Reading resource samples back: statistics per series, BRIEF §4's
// throughput comparison across runs, and charts of the samples over time.
// Torch-free; used by the CLI and by anything else that reads the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::monitor {

// Mean, median, p95 and maximum of one resource series.
struct SeriesStats {
  std::string key;
  int64_t n = 0;
  double mean = 0, p50 = 0, p95 = 0, max = 0;
};

// proc/*, sys/*, gpuN/*, energy/*: the series a ResourceSampler records
// (store::is_own_metric, exit_code aside); gpu_util is a user's.
bool is_resource_key(std::string_view key);

// Statistics of every resource series of a run over its finite samples,
// without those taken in the run's first `warmup_s` seconds (unless that
// would leave none).
std::vector<SeriesStats> resource_stats(store::Store& store, const store::RunInfo& run,
                                        double warmup_s);

// One run's column of the throughput comparison: the value of each row of
// throughput_rows(), absent when the run did not record it.
struct ThroughputColumn {
  std::string run_uuid;
  std::string label;       // run name, else the UUID's first 8 characters
  std::string batch_size;  // the batch_size param, "-" when absent
  std::vector<std::optional<double>> values;
  bool target_missed = false;  // a target accuracy was set and never reached
};

// The rows of the comparison after "run" and "batch size": label and
// fmt format of the value.
struct ThroughputRow {
  const char* label;
  const char* format;
};
// The rows in display order; a static list (any thread).
const std::vector<ThroughputRow>& throughput_rows();

// Process-tree CPU and RSS means (without warm-up), GPU 0 utilisation and
// memory, steps/s and samples/s (mean over epochs), epochs run, final test
// accuracy, time and epochs to the target accuracy, energy.
ThroughputColumn throughput_column(store::Store& store, const store::RunInfo& run, double warmup_s);

// SVG charts of a run's samples over time since its start: "cpu" (CPU and
// GPU utilisation, %) or "memory" (process RSS, system memory, GPU memory,
// MiB).
std::string resource_chart_svg(store::Store& store, const store::RunInfo& run,
                               std::string_view kind);

}  // namespace trainscope::monitor
