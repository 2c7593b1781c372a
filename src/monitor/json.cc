// JSON and CSV of resource statistics and of the throughput table
// (monitor/json.h).
#include "trainscope/monitor/json.h"

#include <ostream>

#include "trainscope/core/util.h"

namespace trainscope::monitor {

using format::Json;

namespace {

// Whether throughput row `row` is one of the rows to the target accuracy
// (time and epochs to target): none when the run missed its target.
bool missed_target_row(const ThroughputColumn& c, size_t row) {
  return c.target_missed && (row == 8 || row == 9);
}

}  // namespace

std::string throughput_cell(const ThroughputColumn& c, size_t row) {
  const auto& rows = throughput_rows();
  if (missed_target_row(c, row)) return "not reached";
  const auto& v = c.values.at(row);
  return v ? fmt::format(fmt::runtime(rows[row].format), *v) : std::string("-");
}

Json resource_stats_json(const std::vector<SeriesStats>& stats) {
  Json arr = Json::array();
  for (const auto& s : stats)
    arr.push_back({{"key", s.key},
                   {"n", s.n},
                   {"mean", s.mean},
                   {"p50", s.p50},
                   {"p95", s.p95},
                   {"max", s.max}});
  return arr;
}

Json throughput_json(const std::vector<ThroughputColumn>& columns) {
  Json js = Json::array();
  const auto& rows = throughput_rows();
  for (const auto& c : columns) {
    Json j = {{"run", c.run_uuid},
              {"name", c.label},
              {"batch size", c.batch_size == "-" ? Json() : Json(c.batch_size)},
              {"target missed", c.target_missed}};
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& v = c.values.at(i);
      j[rows[i].label] = !v || missed_target_row(c, i) ? Json() : format::number(*v);
    }
    js.push_back(j);
  }
  return js;
}

void resource_stats_csv(std::ostream& out, const std::vector<SeriesStats>& stats) {
  out << "key,n,mean,p50,p95,max\n";
  for (const auto& s : stats)
    out << core::csv_field(s.key) << "," << s.n << "," << core::format_double(s.mean) << ","
        << core::format_double(s.p50) << "," << core::format_double(s.p95) << ","
        << core::format_double(s.max) << "\n";
}

}  // namespace trainscope::monitor
