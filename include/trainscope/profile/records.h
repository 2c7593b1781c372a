// The per-layer profiler's records (Store::append_records): the cells of
// each profiled step and the layers' facts. Torch-free: the dashboard, the
// cost model and `profile show` read them without libtorch.
//
// Layouts (docs/store_format.md, "Records"):
//   kind "profile_steps", key "", step S: uvarint n, n x (bytes layer,
//     bytes phase, f64 us): the cells of step S by layer, then phase
//   kind "profile_layers", key "", step 0: uvarint n, n x (bytes name,
//     bytes info JSON), in forward order
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::profile {

// The record kinds a profile writes (docs/store_format.md): its cells by
// step, and its layers' facts.
inline constexpr const char* kStepsKind = "profile_steps";
inline constexpr const char* kLayersKind = "profile_layers";

// One cell of a profiled iteration: self time of `layer` in `phase`.
// Layer "" holds a phase's operators no layer claimed, "(overhead)" its time
// outside any operator, and layer "(other)" phase "other" the iteration's
// time outside every phase.
struct ProfileCell {
  int64_t step = 0;
  std::string layer;
  std::string phase;
  double us = 0;
};

// One record per step among `cells` (a cell given twice for a step: the
// later counts), in increasing step order.
std::vector<store::Record> cell_records(const std::vector<ProfileCell>& cells);
// Per-layer facts as (name, JSON text), in forward order.
store::Record layers_record(const std::vector<std::pair<std::string, std::string>>& layers);

// The run's cells by step, then layer, then phase (a step recorded twice
// keeps its first cells). Throws Error(kStore) for a damaged record.
std::vector<ProfileCell> read_cells(store::Store& store, std::string_view uuid);
// The run's layer facts (the first list recorded); empty when none.
std::vector<std::pair<std::string, std::string>> read_layers(store::Store& store,
                                                             std::string_view uuid);

}  // namespace trainscope::profile
