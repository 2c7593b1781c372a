// A profile grid: every model at every batch size, profiled repeat after
// repeat, recorded as runs that feed the cost model. The one part of profile
// above the trainer (it trains); the rest of profile sits below it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/profile/report.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

// configs/profile_grid.yaml: base (a config, relative to the grid file),
// models, batch_sizes, steps, repeats, set (extra overrides).
struct GridSpec {
  std::filesystem::path base;
  std::vector<std::string> models;
  std::vector<int64_t> batch_sizes;
  int64_t steps = 16;
  int64_t repeats = 1;
  std::vector<std::string> set;
};

// Reads a grid file. Throws Error(kUsage) naming the file and what is wrong.
GridSpec load_grid(const std::filesystem::path& file);

// One run of a grid (grid_cells).
struct GridCell {
  std::string model;
  int64_t batch = 0;
  int64_t repeat = 1;     // 1-based
  bool repeated = false;  // the grid has more than one repeat
  std::string name;       // run name: grid-<model>-b<batch>[-r<repeat>]
};

// Every cell in the order it runs: repeats round-robin (every model once,
// then again), so that a slow spell of a shared machine hits all models
// alike; the cost model takes the median over repeats.
std::vector<GridCell> grid_cells(const GridSpec& spec);

// The config overrides of one cell: a test subset of 500 (timing needs no
// full evaluation), the grid's own `set`, then the cell's model, batch size,
// profiling and step count.
std::vector<std::string> cell_overrides(const GridSpec& spec, const GridCell& cell);

// Profiles every cell into `store`. `before(i, n, cell)` and
// `after(i, n, cell, summary)` report progress (i is 1-based).
struct GridProgress {
  std::function<void(size_t, size_t, const GridCell&)> before;
  std::function<void(size_t, size_t, const GridCell&, const ProfileSummary&)> after;
};
// Trains each cell in turn on the calling thread (a Trainer each, holding
// `store` shared), calling `progress` around each. Throws what loading a
// cell's config or training it throws, leaving the cells before it
// recorded.
void run_grid(std::shared_ptr<store::Store> store, const GridSpec& spec,
              const std::string& command_line, const GridProgress& progress = {});

}  // namespace trainscope::profile
