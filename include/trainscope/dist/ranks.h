// Every rank of a data-parallel run side by side, from what rank 0
// recorded (dist/README.md): the dashboard's Ranks section and `runs
// ranks` read it. Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::dist {

// The per-rank series a data-parallel run records, dist/rank<R>/<field>.
inline const std::vector<std::string> kRankFields = {"step_ms", "compute_ms",  "comm_ms",
                                                     "wait_ms", "cpu_percent", "rss_mib"};
// Recorded only where the rank has a GPU (NVML).
inline const std::vector<std::string> kRankGpuFields = {"gpu_util_percent", "gpu_power_w",
                                                        "gpu_mem_used_mib", "gpu_energy_j"};

// One rank's host (its name and the address Gloo bound to) and, per field
// of RankSummary::fields, the median and 95th percentile over its recorded
// steps (NaN for a field the rank recorded no finite value of).
struct RankFigures {
  int rank = 0;
  std::string host, address;
  std::map<std::string, double> median;  // field -> median over the recorded steps
  std::map<std::string, double> p95;
};

// What rank_summary returns: a plain value.
struct RankSummary {
  int world_size = 0;  // 0: not a data-parallel run
  std::string backend, rendezvous;
  int buckets = 0;
  double bytes_reduced = 0;         // per step
  std::vector<std::string> fields;  // kRankFields, then the GPU fields recorded
  std::vector<RankFigures> ranks;
  // The slowest rank by median step time, and how much longer its median
  // compute is than the fastest rank's (what the others wait for).
  int slowest = -1;
  double compute_spread_ms = 0;
};

// From the run's dist.* tags and dist/rank<R>/* series.
RankSummary rank_summary(store::Store& store, const std::string& uuid);

}  // namespace trainscope::dist
