// Runs found by a query (store/query.h) as table cells, CSV and JSON, and
// the metric points of many runs as one long table.
#include <ostream>

#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::format {
using store::FieldValue;

namespace {

bool is_time(const std::string& column) {
  return column == "start_time" || column == "end_time" || column == "attributes.start_time" ||
         column == "attributes.end_time" || column == "run.start_time" || column == "run.end_time";
}

bool is_absent(const FieldValue& v) { return std::holds_alternative<std::monostate>(v); }

// The value as CSV/JSON text: times in UTC, numbers exactly.
std::string exact_text(const std::string& column, const FieldValue& v) {
  if (const auto* d = std::get_if<double>(&v))
    return is_time(column) ? core::format_utc(*d) : core::format_double(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return {};
}

}  // namespace

std::string run_column_title(const std::string& column) {
  if (column == "uuid") return "RUN";
  if (column == "start_time") return "STARTED (UTC)";
  if (column == "end_time") return "ENDED (UTC)";
  if (column.find('.') != std::string::npos) return column;
  std::string t = column;
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return t;
}

std::string run_cell(const store::RunRow& row, const std::string& column) {
  const FieldValue v = store::field_value(row, column);
  if (is_absent(v)) return "-";
  if (column == "uuid") return core::short_uuid(row.info.uuid);
  if (column == "duration") return duration(std::get<double>(v));
  if (const auto* d = std::get_if<double>(&v)) {
    if (!is_time(column)) return value(*d);
    std::string t = core::format_utc(*d).substr(0, 19);
    if (t.size() > 10) t[10] = ' ';  // "-" for a stored time that is no time
    return t;
  }
  return std::get<std::string>(v);
}

Json run_rows(const store::RunQueryResult& result) {
  Json runs = Json::array();
  for (const auto& row : result.rows) {
    Json o = Json::object();
    for (const auto& c : result.columns) {
      const FieldValue v = store::field_value(row, c);
      const auto* d = std::get_if<double>(&v);
      if (is_absent(v) || (d && is_time(c) && !store::is_a_time(*d)))
        o[c] = nullptr;  // a stored time that is no time: null, as every JSON reader has it
      else if (d && !is_time(c))
        o[c] = number(*d);
      else
        o[c] = exact_text(c, v);
    }
    runs.push_back(std::move(o));
  }
  return {{"total", result.total}, {"columns", result.columns}, {"runs", std::move(runs)}};
}

void run_rows_csv(std::ostream& out, const store::RunQueryResult& result) {
  for (size_t i = 0; i < result.columns.size(); ++i)
    out << (i ? "," : "") << core::csv_field(result.columns[i]);
  out << "\n";
  for (const auto& row : result.rows) {
    for (size_t i = 0; i < result.columns.size(); ++i)
      out << (i ? "," : "")
          << core::csv_field(
                 exact_text(result.columns[i], store::field_value(row, result.columns[i])));
    out << "\n";
  }
}

void runs_metrics_csv(std::ostream& out, store::Store& store,
                      const std::vector<store::RunInfo>& runs,
                      const std::function<void(size_t)>& progress) {
  out << "run,name,key,step,wall_time,value\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    // The UUID too is a store's bytes: quoted like the rest.
    const std::string prefix = core::csv_field(r.uuid) + "," + core::csv_field(r.name) + ",";
    for (const auto& m : store.metric_summaries(r.uuid)) {
      const std::string key = core::csv_field(m.key);
      for (const auto& p : store.metric(r.uuid, m.key))
        out << prefix << key << ',' << p.step << ',' << core::format_double(p.wall_time) << ','
            << core::format_double(p.value) << '\n';
    }
    if (progress) progress(i + 1);
  }
}

}  // namespace trainscope::format
