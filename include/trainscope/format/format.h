// Output formats of everything a reader shows: JSON, CSV and the short text
// forms of numbers and durations. Torch-free, so the CLI, a web server or a
// Python module encode runs, metrics, manifests, diffs, resource statistics
// and profiles the same way. JSON numbers that are NaN or infinite become
// the strings "nan", "inf", "-inf" (JSON has no literal for them); CSV
// fields are quoted per RFC 4180 when needed.
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/env/recreate.h"
#include "trainscope/instrument/results.h"
#include "trainscope/monitor/report.h"
#include "trainscope/numerics/logmap.h"
#include "trainscope/profile/costmodel.h"
#include "trainscope/profile/report.h"
#include "trainscope/repro/diff.h"
#include "trainscope/repro/documents.h"
#include "trainscope/stats/compare.h"
#include "trainscope/stats/factors.h"
#include "trainscope/stats/runs.h"
#include "trainscope/store/query.h"
#include "trainscope/store/store.h"
#include "trainscope/store/views.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"
#include "trainscope/tune/tune.h"

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
// A run; `full` adds the command line and config.
Json run(const store::RunInfo& r, bool full);
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
// [{group, key, a, b}] in the given order.
Json differences(const std::vector<env::Difference>& diffs);
// `env recreate`: the release, the pinned packages (each with its pool URL
// and its repacked file, "" when none, and its check when `checks` holds one
// per package, as check_pins returns: ok, message, source, note), the Python
// packages and trainscope's commit.
Json recipe(const env::Recipe& r, const std::vector<env::PinCheck>& checks);
// The RunDiff's fields, its tensor deltas as [{tensor, elements,
// differing, max_abs, max_rel, max_ulp}].
Json run_diff(const repro::RunDiff& d);
// [{item, answer, answered}].
Json checklist(const std::vector<repro::ChecklistItem>& items);
// [{key, n, mean, p50, p95, max}].
Json resource_stats(const std::vector<monitor::SeriesStats>& stats);
// One object per run: its UUID and every throughput row as a display string.
Json throughput(const std::vector<monitor::ThroughputColumn>& columns);
// A run's profile with the measured profiler overhead and the GEMM peak.
struct ProfileExtras {
  double step_ms_profiled = 0, step_ms_unprofiled = 0, peak_gflops = 0;
};
// {run, profiled_iterations, ...} with one object per layer (times in us,
// forward FLOPs and GFLOP/s) and the categories.
Json profile(const std::string& run_uuid, const profile::ProfileSummary& s,
             const ProfileExtras& extras);
// The iteration rows (ms) and layer rows (us), with the MAPEs.
Json costmodel_eval(const profile::CostModelEval& e);
// The first `top` operators (0: all) with self/total time, their shares and
// calls, per profiled step.
Json operator_table(const std::string& run_uuid, const profile::OperatorTable& t, size_t top);
// The result's reference and each variant by id; `r` must hold
// trajectories (as run_logmap's do).
Json logmap(const std::string& run_uuid, const numerics::LogmapOptions& o,
            const numerics::LogmapResult& r);
// {run, n, exact, results: [{method, value, abs_error, ulp_error}]}.
Json sum(const std::string& run_uuid, const numerics::SumReport& r);
// What `trainscope train` reached: its test accuracy null when it was not
// evaluated (a run stopped before an epoch ended).
Json train_result(const instrument::TrainResult& r);
// A checkpoint's evaluation (`trainscope eval`).
Json evaluation(const std::string& run_uuid, const std::string& checkpoint,
                const instrument::EvalResult& r);
// `trainscope tune`: each setting's step times and numbers, the layers of
// the baseline and the fastest.
Json tune_report(const tune::TuneReport& rep);
// Statistics of a metric over runs (trainscope stats).
Json metric_stats(const stats::MetricStats& m);
// Two groups of runs compared (stats/compare.h): `trainscope stats
// --compare` and each pair of a study report's cells.
Json pair_comparison(const stats::PairComparison& c);
// Variance components by factor (stats/factors.h): `trainscope stats --by
// K1 --by K2` and a study report's grid.
Json factor_analysis(const stats::FactorAnalysis& f);
// The study, its liveness, each cell's counts and the total; Slurm's jobs
// and queue when it ran there.
Json study_status(const study::StudyStatus& s);
// Every part of the analysis (cells, comparisons, factor components,
// weights, cost, notes).
Json study_analysis(const study::StudyAnalysis& a);

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
// Every metric point of many runs in one long table:
// "run,name,key,step,wall_time,value".
void runs_metrics_csv(std::ostream& out, store::Store& store,
                      const std::vector<store::RunInfo>& runs,
                      const std::function<void(size_t)>& progress = {});
// One row per run, one column per query column (absent: empty; times
// ISO-8601 UTC; full UUIDs; numbers round-trip exactly).
void run_rows_csv(std::ostream& out, const store::RunQueryResult& result);
// A header "key,n,mean,p50,p95,max" and one row per series.
void resource_stats_csv(std::ostream& out, const std::vector<monitor::SeriesStats>& stats);
// One row per layer (times in us, FLOPs, GFLOP/s), then one per category.
void profile_csv(std::ostream& out, const profile::ProfileSummary& s);
// "level,model,batch,layer,type,measured_us,predicted_us,error_percent":
// the iteration rows, then the layer rows.
void costmodel_eval_csv(std::ostream& out, const profile::CostModelEval& e);
// The first `top` operators (0: all) as operator_table's JSON has them.
void operator_table_csv(std::ostream& out, const profile::OperatorTable& t, size_t top);
// One row per group: n, mean, SD and its intervals, CV, range, Diff%.
void metric_stats_csv(std::ostream& out, const stats::MetricStats& m);

// A view's columns as the header, then one line per row (absent cells
// empty, numbers round-trip exactly).
void view_csv(std::ostream& out, const store::ViewTable& t);
// A view's cell for people: numbers to 6 digits, "-" when absent.
std::string view_cell(const store::ViewCell& c);

// The display string of one throughput cell (row i of throughput_rows()).
std::string throughput_cell(const monitor::ThroughputColumn& c, size_t row);

}  // namespace trainscope::format
