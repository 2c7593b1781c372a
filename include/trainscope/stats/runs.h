// Statistics over recorded runs: one value of a metric per run (its last,
// min or max), grouped by a param, tag or run attribute, summarised and compared. What
// `trainscope stats` prints and what study reports are made of.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainscope/stats/stats.h"
#include "trainscope/stats/variance.h"
#include "trainscope/store/store.h"

namespace trainscope::stats {

// Which value of a run's metric series stands for the run.
enum class Reduce { kLast, kMin, kMax };
// "last", "min", "max"; throws otherwise.
Reduce parse_reduce(const std::string& name);

// Which runs, and which value of each.
struct Selection {
  std::vector<std::string> runs;  // references (UUID, prefix, name); empty: use the filter
  store::RunFilter filter;        // when runs is empty (e.g. parent_uuid of a study)
  // When set (and runs is empty): only these of the filter's runs, by
  // UUID. `trainscope stats` passes the runs every reader counts
  // (study::counted_runs), so that a study's set-aside attempts are left out.
  std::optional<std::set<std::string>> only;
  std::string metric = "test/accuracy";
  Reduce reduce = Reduce::kLast;
  // What to group by, as the filter language names it: params.KEY,
  // tags.KEY, a run attribute (experiment, status, host, name, ...), or a
  // bare params key (optimizer.name); empty: one group.
  std::string by;
};

// One run's value of the metric, and its group.
struct RunValue {
  std::string run;  // UUID
  std::string name;
  std::string group;  // value of Selection::by ("" when ungrouped), or kUnsetGroup
  double value = 0;
};

// The group of the runs that lack Selection::by's field. No store holds a
// NUL byte in a value, so no stored value is this group: runs whose value
// is the text "(unset)" stay a group of their own (twenty-second hunt,
// A-D3). JSON shows it as null, CSV as an empty field, text as group_text.
inline const std::string kUnsetGroup(1, '\0');

// A group as text names it: kUnsetGroup "(unset)", any other as it is.
inline std::string group_text(const std::string& group) {
  return group == kUnsetGroup ? "(unset)" : group;
}

// One value per finished run that has the metric; throws when none has it.
std::vector<RunValue> collect(store::Store& store, const Selection& selection);

// The group a field's text names: a decimal number by its value (0.1, 0.10
// and 1e-1 are one group, "0.1", as a filter and a study grid take them
// as one value); any other text as it is.
std::string group_label(const std::string& text);

// The largest magnitude a value of `stats` may have: a variance or a sum
// of squares of one beyond it would overflow.
inline constexpr double kLargestValue = 1e150;

// One rule for a value that is not finite (a diverged run's nan, inf), in
// every mode of `stats`: the run is left out, and a note says so ("run
// 1a2b3c4d left out: its test/accuracy is nan"). So is a value beyond
// ±kLargestValue: "... is 1e+308, beyond ±1e+150, where its square
// overflows".
std::vector<RunValue> finite_values(const std::vector<RunValue>& values, const std::string& metric,
                                    std::vector<std::string>& notes);

// How analyse summarises and compares the groups.
struct AnalysisOptions {
  int ddof = 1;
  double confidence = 0.95;
  int bootstrap_resamples = 10000;
  uint64_t seed = 0;
  std::optional<double> reference;  // Diff% against this value
  bool shapiro_as_scipy = false;    // single precision, SciPy's exact numbers
};

// One group's summary, SD interval and normality test.
struct GroupStats {
  std::string group;
  Summary summary;
  std::optional<Interval> sd_ci;       // bootstrap CI of the SD
  std::optional<TestResult> shapiro;   // n >= 3 and not constant
  std::optional<double> diff_percent;  // against AnalysisOptions::reference
};

// Welch's t-test of groups a and b, its Holm-adjusted p, Hedges' g.
struct PairTest {
  std::string a, b;
  TestResult welch;
  double p_holm = 1;
  std::optional<double> hedges_g;
};

// The tests across every group (ANOVA, Kruskal-Wallis, Levene), the
// effect size and variance components, and every pair's test.
struct Comparison {
  std::optional<TestResult> anova, kruskal, levene;
  std::optional<double> eta_squared;
  std::optional<VarianceComponents> components;
  std::vector<PairTest> pairs;  // Welch t per pair, Holm-adjusted
};

// What analyse returns: a plain value.
struct MetricStats {
  std::string metric;
  AnalysisOptions options;
  std::vector<GroupStats> groups;
  std::optional<Comparison> comparison;  // with >= 2 groups
  // What could not be computed and why (a constant group, one value, ...).
  std::vector<std::string> notes;
};

// Groups `values` by RunValue::group (in order of first appearance),
// summarises each and, with two groups or more, compares them. A run whose
// value is not finite is left out with a note; what cannot be computed
// (a constant group, ...) is left unset with a note. Throws Error(kUsage)
// when no value is finite. Pure: any thread.
MetricStats analyse(const std::string& metric, const std::vector<RunValue>& values,
                    const AnalysisOptions& options = {});

}  // namespace trainscope::stats
