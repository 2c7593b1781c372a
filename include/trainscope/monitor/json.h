// JSON, CSV and text of what the monitor measured: resource statistics
// (`trainscope resources`, the API) and the throughput table (`report
// throughput`). Pure functions: they hold nothing and may run on any
// thread; the CSV writer leaves a failed write in `out`'s state.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "trainscope/format/format.h"
#include "trainscope/monitor/report.h"

namespace trainscope::monitor {

// [{key, n, mean, p50, p95, max}].
format::Json resource_stats_json(const std::vector<SeriesStats>& stats);
// One object per run: its UUID, name, batch size (null when not recorded),
// whether it missed its target accuracy, and every throughput row as a
// number (format::number: "nan" for a non-finite value), null where the
// run has none (or missed the target: the rows to target).
format::Json throughput_json(const std::vector<ThroughputColumn>& columns);
// A header "key,n,mean,p50,p95,max" and one row per series.
void resource_stats_csv(std::ostream& out, const std::vector<SeriesStats>& stats);
// The display string of one throughput cell (row i of throughput_rows()).
std::string throughput_cell(const ThroughputColumn& c, size_t row);

}  // namespace trainscope::monitor
