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

std::string throughput_cell(const monitor::ThroughputColumn& c, size_t row) {
  const auto& rows = monitor::throughput_rows();
  const bool target_row = row == 8 || row == 9;  // time and epochs to target
  if (target_row && c.target_missed) return "not reached";
  const auto& v = c.values.at(row);
  return v ? fmt::format(fmt::runtime(rows[row].format), *v) : std::string("-");
}

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

void resource_stats_csv(std::ostream& out, const std::vector<monitor::SeriesStats>& stats) {
  out << "key,n,mean,p50,p95,max\n";
  for (const auto& s : stats)
    out << csv_field(s.key) << "," << s.n << "," << format_double(s.mean) << ","
        << format_double(s.p50) << "," << format_double(s.p95) << "," << format_double(s.max)
        << "\n";
}

void profile_csv(std::ostream& out, const profile::ProfileSummary& s) {
  out << "layer,type,forward_us,backward_us,update_us,forward_flops,forward_gflops_per_s\n";
  for (const auto& l : s.layers)
    out << csv_field(l.layer) << "," << csv_field(l.type) << "," << format_double(l.forward_us)
        << "," << format_double(l.backward_us) << "," << format_double(l.update_us) << ","
        << format_double(l.flops) << "," << format_double(gflops(l.flops, l.forward_us)) << "\n";
  for (const auto& [k, v] : s.categories)
    out << csv_field(k) << ",,," << format_double(v) << ",,,\n";
}

void operator_table_csv(std::ostream& out, const profile::OperatorTable& t, size_t top) {
  out << "name,calls,self_us,self_percent,total_us,avg_us,self_us_per_step\n";
  const double steps = static_cast<double>(std::max<int64_t>(1, t.steps));
  for (size_t i = 0; i < t.ops.size() && (top == 0 || i < top); ++i) {
    const auto& o = t.ops[i];
    out << csv_field(o.name) << "," << o.calls << "," << format_double(o.self_us) << ","
        << format_double(t.self_us > 0 ? o.self_us / t.self_us * 100 : 0.0) << ","
        << format_double(o.total_us) << ","
        << format_double(o.total_us / static_cast<double>(o.calls)) << ","
        << format_double(o.self_us / steps) << "\n";
  }
}

void costmodel_eval_csv(std::ostream& out, const profile::CostModelEval& e) {
  out << "level,model,batch,layer,type,measured_us,predicted_us,error_percent\n";
  for (const auto& r : e.rows)
    out << fmt::format("iteration,{},{},,,{:.3f},{:.3f},{:.2f}\n", csv_field(r.model), r.batch,
                       r.measured_us, r.predicted_us, (r.predicted_us / r.measured_us - 1) * 100);
  for (const auto& r : e.layer_rows)
    out << fmt::format("layer,{},{},{},{},{:.3f},{:.3f},{:.2f}\n", csv_field(r.model), r.batch,
                       csv_field(r.layer), csv_field(r.type), r.measured_us, r.predicted_us,
                       (r.predicted_us / r.measured_us - 1) * 100);
}

}  // namespace trainscope::format
