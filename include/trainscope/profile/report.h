// Turning iteration profiles into store rows, tables, a Chrome trace and an
// SVG, and reading them back. Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainscope/profile/types.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

std::vector<std::pair<std::string, std::string>> layers_to_json(
    const std::vector<LayerInfo>& layers);
std::vector<LayerInfo> layers_from_json(
    const std::vector<std::pair<std::string, std::string>>& rows);

// Every category of each iteration: (layer, phase) op self times, phase
// overheads as layer "(overhead)", and "(other)". They sum to the wall time.
std::vector<store::ProfileCell> to_cells(const std::vector<IterationProfile>& profiles);

// Chrome trace JSON (chrome://tracing, Perfetto): one complete event ("X")
// per operator on a forward/backward/update track, and flow arrows from each
// forward operator to the backward operator with the same sequence number.
std::string chrome_trace(const IterationProfile& p);

struct LayerTime {
  std::string layer;
  std::string type;
  double forward_us = 0, backward_us = 0, update_us = 0;  // mean per profiled iteration
  double flops = 0;
  double total() const { return forward_us + backward_us + update_us; }
};

struct ProfileSummary {
  int64_t iterations = 0;
  double wall_us = 0;                        // mean iteration wall time
  std::vector<LayerTime> layers;             // forward order
  std::map<std::string, double> categories;  // non-layer categories, mean us
  double coverage_min = 0, coverage_mean = 0;
};

// Aggregates a run's stored profile (means over profiled iterations).
ProfileSummary summarize(store::Store& store, const std::string& uuid);

// Stacked horizontal bars: time per layer split by phase.
std::string layer_chart_svg(const ProfileSummary& s, const std::string& title);

}  // namespace trainscope::profile
