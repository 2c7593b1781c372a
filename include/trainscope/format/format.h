// The shared output toolkit: JSON numbers, CSV, the short text forms of
// numbers and durations, and the documents of what the store holds (runs,
// metrics, artifacts, exports, views). Torch-free, so the CLI, a web server
// or a Python module encode them the same way. Each capability formats its
// own results next to its types (profile/json.h, stats/json.h, ...) with
// this toolkit. JSON numbers that are NaN or infinite become
// the strings "nan", "inf", "-inf" (JSON has no literal for them); CSV
// fields are quoted per RFC 4180 when needed.
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/store/query.h"
#include "trainscope/store/store.h"
#include "trainscope/store/views.h"

namespace trainscope::format {

// Every function below is pure: it builds its value from its arguments
// (those given a Store read it, and throw what it throws), holds nothing,
// and may run on any thread.
using Json = nlohmann::json;

// How every JSON text trainscope writes treats bytes that are not UTF-8 (a
// run name, tag or param holding Latin-1 bytes, ...): each invalid byte
// becomes U+FFFD, so one such value never breaks the output for the rest
// (docs/store_format.md). Use as `j.dump(2, ' ', false, kInvalidUtf8)`.
inline constexpr auto kInvalidUtf8 = nlohmann::json::error_handler_t::replace;

// --- text --------------------------------------------------------------------
// "1h02m", "3m05s", "4.2s"; "-" for a negative or non-finite duration.
std::string duration(double seconds);
// 6 significant digits; nan/inf spelled out.
std::string value(double v);
// GFLOP/s of `flops` done in `us` microseconds (0 when us is 0).
double gflops(double flops, double us);

// A cell of `runs list` for people: the UUID's first 8 characters, times in
// UTC, durations as "3m05s", numbers to 6 digits, "-" when absent.
std::string run_cell(const store::RunRow& row, const std::string& column);
// The header of a column for people ("STARTED (UTC)", "metrics.loss").
std::string run_column_title(const std::string& column);

// --- JSON --------------------------------------------------------------------
// `v` as a JSON number, or "nan", "inf", "-inf" when it is not finite.
Json number(double v);
// number(*v), or null when `v` is absent.
template <typename T>
Json optional(const std::optional<T>& v) {
  if (!v) return nullptr;
  return number(*v);
}
// A run; `full` adds the command line and config.
Json run(const store::RunInfo& r, bool full);
// A run as readers show it: a stale one (Store::liveness) says "stale" in
// "status", and "stale" holds why.
Json run(const store::RunInfo& r, bool full, const store::Liveness& shown);
// Marks `j` (a run's object) stale as run() with a Liveness does.
void mark_stale(Json& j, const store::Liveness& shown);
// A page of runs: {"total": matching runs before paging, "columns": [...],
// "runs": [one object per run: column -> value]}. Absent values are null,
// times ISO-8601 UTC, the duration in seconds, metrics numbers.
Json run_rows(const store::RunQueryResult& result);
// {key, count, last_step, last, min, max}, numbers through number().
Json metric_summary(const store::MetricSummary& m);
// {name, kind, sha256, size, path, created_time (ISO-8601 UTC)}.
Json artifact(const store::ArtifactInfo& a);
// [{step, wall_time, value}] in the given order.
Json metric_points(const std::vector<store::MetricPoint>& points);
// Everything recorded for a run: the run, params, tags, metric summaries,
// artifacts, and with `with_points` every metric point by key.
Json run_export(store::Store& store, const store::RunInfo& r, bool with_points);

// A capability's view (store/views.h): {name, title, kind, columns, rows:
// [[cell, ...]], chart: {series, x, y, log_y} or null}; numbers through
// number(), absent cells null.
Json view(const store::View& v, const store::ViewTable& t);

// --- CSV ---------------------------------------------------------------------
// "key,step,wall_time,value" (or without key) and one row per point.
void metric_csv_header(std::ostream& out, bool with_key);
// The rows of `points` (with `key` first when given; nullptr: none).
// Like every writer below it writes to `out` and leaves failures in its
// state (nothing throws for them).
void metric_csv(std::ostream& out, const std::string* key,
                const std::vector<store::MetricPoint>& points);
// Every metric point of a run, with its key.
void run_metrics_csv(std::ostream& out, store::Store& store, const store::RunInfo& r);
// One row per metric of a run: key,count,last_step,last,min,max (the
// fields of metric_summary's JSON), keys quoted by core::csv_field.
void metric_summaries_csv(std::ostream& out, const std::vector<store::MetricSummary>& ms);
// Every metric point of many runs in one long table:
// "run,name,key,step,wall_time,value".
void runs_metrics_csv(std::ostream& out, store::Store& store,
                      const std::vector<store::RunInfo>& runs,
                      const std::function<void(size_t)>& progress = {});
// One row per run, one column per query column (absent: empty; times
// ISO-8601 UTC; full UUIDs; numbers round-trip exactly).
void run_rows_csv(std::ostream& out, const store::RunQueryResult& result);

// A view's columns as the header, then one line per row (absent cells
// empty, numbers round-trip exactly).
void view_csv(std::ostream& out, const store::ViewTable& t);
// A view's cell for people: numbers to 6 digits, "-" when absent.
std::string view_cell(const store::ViewCell& c);

}  // namespace trainscope::format
