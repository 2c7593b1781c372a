// Short text forms and CSV.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <type_traits>
#include <variant>

#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::format {
using core::csv_field;
using core::format_double;

std::string duration(double s) { return core::format_duration(s); }

std::string value(double v) { return core::format_short(v); }

double gflops(double flops, double us) { return us > 0 ? flops / us / 1e3 : 0.0; }

namespace {

// A cell as `csv` (exact numbers, quoted text) or for people.
std::string cell_text(const store::ViewCell& c, bool csv) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return csv ? "" : "-";
        else if constexpr (std::is_same_v<T, double>)
          return csv ? format_double(x) : value(x);
        else if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(x);
        else
          // No control byte raw, in CSV either: a key the rule refuses may
          // still be in a store written by hand.
          return csv ? csv_field(core::escape_for_display(x)) : x;
      },
      c);
}

}  // namespace

std::string view_cell(const store::ViewCell& c) { return cell_text(c, false); }

void view_csv(std::ostream& out, const store::ViewTable& t) {
  for (size_t i = 0; i < t.columns.size(); ++i) out << (i ? "," : "") << csv_field(t.columns[i]);
  out << '\n';
  for (const auto& row : t.rows) {
    for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << cell_text(row[i], true);
    out << '\n';
  }
}

void metric_csv_header(std::ostream& out, bool with_key) {
  out << (with_key ? "key,step,wall_time,value\n" : "step,wall_time,value\n");
}

void metric_csv(std::ostream& out, const std::string* key,
                const std::vector<store::MetricPoint>& pts) {
  const std::string k = key ? csv_field(*key) + "," : std::string();
  for (const auto& p : pts)
    out << k << p.step << ',' << format_double(p.wall_time) << ',' << format_double(p.value)
        << '\n';
}

void run_metrics_csv(std::ostream& out, store::Store& store, const store::RunInfo& r) {
  metric_csv_header(out, true);
  for (const auto& m : store.metric_summaries(r.uuid))
    metric_csv(out, &m.key, store.metric(r.uuid, m.key));
}

void metric_summaries_csv(std::ostream& out, const std::vector<store::MetricSummary>& ms) {
  out << "key,count,last_step,last,min,max\n";
  for (const auto& m : ms)
    out << csv_field(m.key) << ',' << m.count << ',' << m.last_step << ','
        << format_double(m.last_value) << ',' << format_double(m.min) << ',' << format_double(m.max)
        << '\n';
}

}  // namespace trainscope::format
