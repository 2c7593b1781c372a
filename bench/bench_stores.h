// Stores the benchmarks share, built once and kept in $TMPDIR.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::bench {

namespace fs = std::filesystem;

inline constexpr int kRuns = 10'000;

// $TMPDIR/NAME, filled by `fill` the first time (into a temporary name, then
// renamed, so an interrupted build is never taken for a finished store).
inline fs::path built_once(const std::string& name,
                           const std::function<void(store::Store&)>& fill) {
  const fs::path db = fs::temp_directory_path() / name;
  if (fs::exists(db)) return db;
  const fs::path tmp = db.string() + ".building";
  fs::remove(tmp);
  fill(*store::Store::open({.uri = "sqlite:" + tmp.string()}));
  fs::rename(tmp, db);
  fs::remove(tmp.string() + "-wal");
  fs::remove(tmp.string() + "-shm");
  return db;
}

// 10,000 finished runs in 7 experiments, each with a config, 40 params, a
// tag and a short loss series: the shape `trainscope train` leaves.
inline fs::path ten_thousand_runs() {
  return built_once("trainscope-cli-startup-v1.db", [](store::Store& s) {
    std::map<std::string, std::string> params;
    for (int p = 0; p < 40; ++p)
      params["section.key" + std::to_string(p)] = std::to_string(p * 0.5);
    for (int i = 0; i < kRuns; ++i) {
      if (i % 1000 == 0) std::fprintf(stderr, "building the store: %d/%d runs\n", i, kRuns);
      store::RunInfo r = s.create_run({.experiment = "exp" + std::to_string(i % 7),
                                       .name = "run-" + std::to_string(i),
                                       .config_text = std::string(1500, 'c') + std::to_string(i)});
      s.set_params(r.uuid, params);
      s.set_tag(r.uuid, "note", "bench");
      std::vector<store::MetricPoint> loss;
      for (int k = 0; k < 20; ++k) loss.push_back({k, 1.7e9 + k, 1.0 / (k + 1)});
      s.append_metrics(r.uuid, {{"train/loss", loss}});
      s.set_status(r.uuid, store::RunStatus::kFinished);
    }
  });
}

// One run ("million") whose train/loss holds 1,000,000 points, appended in
// batches of 1,000 as a recorder would: the long series of a long training.
inline fs::path million_point_series() {
  return built_once("trainscope-bench-million-v1.db", [](store::Store& s) {
    store::RunInfo r = s.create_run({.experiment = "long", .name = "million"});
    for (int b = 0; b < 1000; ++b) {
      std::vector<store::MetricPoint> pts;
      for (int k = 0; k < 1000; ++k) {
        const int step = b * 1000 + k;
        pts.push_back({step, 1.7e9 + step * 0.01,
                       2.3 / (1 + step * 1e-4) + 0.05 * ((step * 7919) % 101) / 101.0});
      }
      s.append_metrics(r.uuid, {{"train/loss", pts}});
    }
    s.set_status(r.uuid, store::RunStatus::kFinished);
  });
}

}  // namespace trainscope::bench
