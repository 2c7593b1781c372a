// JSON and CSV of statistics over runs: what `trainscope stats` prints and
// what a study's report builds on. Numbers through format::number (NaN
// and infinities as strings), absent values null. Pure functions: they
// hold nothing and may run on any thread.
#pragma once

#include <iosfwd>
#include <optional>

#include "trainscope/format/format.h"
#include "trainscope/stats/compare.h"
#include "trainscope/stats/factors.h"
#include "trainscope/stats/runs.h"

namespace trainscope::stats {

// {low, high}, or null.
format::Json interval_json(const std::optional<Interval>& i);
// {test, statistic, p_value, df, df2}, or null.
format::Json test_json(const std::optional<TestResult>& t);
// One group's summary: n, mean, SD and its intervals, CV, range, Diff%,
// Shapiro-Wilk.
format::Json group_json(const GroupStats& g);
// The omnibus tests, the variance components and each pair, or null.
format::Json comparison_json(const std::optional<Comparison>& c);
// Two groups of runs compared (stats/compare.h): `trainscope stats
// --compare` and each pair of a study report's cells.
format::Json pair_comparison_json(const PairComparison& c);
// Variance components by factor (stats/factors.h): `trainscope stats --by
// K1 --by K2` and a study report's grid.
format::Json factor_analysis_json(const FactorAnalysis& f);
// Statistics of a metric over runs (trainscope stats).
format::Json metric_stats_json(const MetricStats& m);
// One row per group: n, mean, SD and its intervals, CV, range, Diff%.
// Leaves a failed write in `out`'s state (nothing throws for it).
void metric_stats_csv(std::ostream& out, const MetricStats& m);

}  // namespace trainscope::stats
