// Turning iteration profiles into store rows, tables, a Chrome trace and an
// SVG, and reading them back. Torch-free.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/profile/records.h"
#include "trainscope/profile/types.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

// Each layer as (name, JSON of its facts): the rows the profile records.
// Pure.
std::vector<std::pair<std::string, std::string>> layers_to_json(
    const std::vector<LayerInfo>& layers);
// Reads layers_to_json's rows back (absent fields default). Throws
// Error(kUsage) for JSON nested too deep (core::check_json_nesting), and
// nlohmann's parse_error or type_error for a row that is not such JSON (a
// damaged store).
std::vector<LayerInfo> layers_from_json(
    const std::vector<std::pair<std::string, std::string>>& rows);

// Every category of each iteration: (layer, phase) op self times, phase
// overheads as layer "(overhead)", and "(other)". They sum to the wall time.
std::vector<ProfileCell> to_cells(const std::vector<IterationProfile>& profiles);

// Chrome trace JSON (chrome://tracing, Perfetto) of every profiled
// iteration: one process per iteration ("step N", times from its start),
// one complete event ("X") per operator on a forward/backward/update track
// with its layer and self time, and flow arrows from each forward operator
// to the backward operator with the same sequence number.
std::string chrome_trace(const std::vector<IterationProfile>& steps);
// The run artifact holding it.
inline constexpr const char* kTraceArtifact = "profile_trace.json";
inline constexpr const char* kTraceKind = "trace";

// One operator's times over every profiled iteration, as the PyTorch
// profiler's key_averages() gives them.
struct OperatorStat {
  std::string name;
  int64_t calls = 0;
  double self_us = 0;   // total self time
  double total_us = 0;  // total time including the operators it called
};
// What operator_table returns: a plain value.
struct OperatorTable {
  int64_t steps = 0;              // profiled iterations in the trace
  double self_us = 0;             // sum of every operator's self time
  std::vector<OperatorStat> ops;  // by self time, largest first
};
// Reads a trace written by chrome_trace(); throws Error(kStore) naming
// `what` when it is not one.
OperatorTable operator_table(std::string_view trace_json, const std::string& what);
// The operator table of a run's stored trace, verified by size and hash
// first. Throws Error(kNotFound) when the run has no trace.
OperatorTable operator_table(store::Store& store, const std::string& uuid);

// One layer's mean times per profiled iteration (ProfileSummary::layers).
struct LayerTime {
  std::string layer;
  std::string type;
  double forward_us = 0, backward_us = 0, update_us = 0;  // mean per profiled iteration
  double flops = 0;
  // The layer's mean microseconds per iteration over the three phases.
  double total() const { return forward_us + backward_us + update_us; }
};

// A run's profile per layer and category, averaged over its profiled
// iterations (summarize): a plain value.
struct ProfileSummary {
  int64_t iterations = 0;
  double wall_us = 0;                        // mean iteration wall time
  std::vector<LayerTime> layers;             // forward order
  std::map<std::string, double> categories;  // non-layer categories, mean us
  double coverage_min = 0, coverage_mean = 0;
};

// The mean of a run's metric `key` over its points; NaN when it has none
// (the profiled and unprofiled step times, the recorded GEMM peak).
double mean_metric(store::Store& store, const std::string& uuid, const std::string& key);

// Aggregates a run's stored profile (means over profiled iterations).
ProfileSummary summarize(store::Store& store, const std::string& uuid);

// Stacked horizontal bars: time per layer split by phase.
std::string layer_chart_svg(const ProfileSummary& s, const std::string& title);

}  // namespace trainscope::profile
