// Is configuration A better than configuration B, by how much, and how many
// runs would tell? Two samples of per-run results in, the numbers of
// Bouthillier et al., "Accounting for variance in machine learning
// benchmarks" (MLSys 2021) out: the probability of improvement P(A > B)
// with a bootstrap interval, the mean difference with its Welch and
// bootstrap intervals, and the runs per side a Welch t-test needs to detect
// a difference.
//
// Torch-free; distributions from Boost.Math. What the samples cannot answer
// (fewer than 2 runs on a side, NaN, both sides constant and equal) throws
// core::Error(kUsage) with one line. tests/stats checks every number against
// SciPy and statsmodels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainscope/stats/runs.h"
#include "trainscope/stats/stats.h"

namespace trainscope::stats {

// P(A > B) = P(a > b) + 0.5 P(a = b) over all na * nb pairs (a from A, b
// from B): the Mann-Whitney U of A divided by na * nb (the AUC).
double probability_of_improvement(Sample a, Sample b);

// The power of the two-sided Welch t-test at level `alpha` with `n` runs on
// each side, when the true difference of the means is `delta` and the SDs
// are sd_a and sd_b. Definition (the SDs taken as known planning values):
//   standard error  se = sqrt((sd_a^2 + sd_b^2) / n)
//   noncentrality   lambda = delta / se
//   Welch df        nu = (n - 1) (sd_a^2 + sd_b^2)^2 / (sd_a^4 + sd_b^4)
//   power = P(T > t) + P(T < -t),  T ~ noncentral t(nu, lambda),
//           t = the 1 - alpha/2 quantile of Student's t(nu)
// With sd_a = sd_b = s this is statsmodels' TTestIndPower().power(
// effect_size=delta/s, nobs1=n, alpha, ratio=1): nu = 2n - 2 and
// lambda = (delta/s) sqrt(n/2). Needs n >= 2 and sd_a^2 + sd_b^2 > 0.
double welch_power(double delta, double sd_a, double sd_b, int64_t n, double alpha = 0.05);

// The smallest n >= 2 with welch_power(delta, sd_a, sd_b, n, alpha) >=
// power (the ceiling of statsmodels' solve_power in the equal-SD case).
// Throws when delta is 0 or not finite, the SDs are both 0, alpha or power
// is outside (0, 1), power <= alpha, or n would exceed 10^9.
int64_t runs_needed(double delta, double sd_a, double sd_b, double alpha = 0.05,
                    double power = 0.8);

// How compare() compares two groups: interval levels, bootstrap size
// and seed, and the power analysis' target.
struct CompareOptions {
  double confidence = 0.95;  // of every interval
  int resamples = 10000;     // bootstrap resamples (>= 100)
  uint64_t seed = 0;         // of the bootstrap: same input, same interval
  double alpha = 0.05;       // two-sided level of the test runs_needed plans
  double power = 0.8;
  // The difference runs_needed should detect; unset: the observed
  // |mean(A) - mean(B)|.
  std::optional<double> delta;
  std::string name_a = "A", name_b = "B";  // what the errors call the sides
};

// What compare() returns for groups A and B: a plain value.
struct PairComparison {
  Summary a, b;                // ddof 1
  double p_improvement = 0.5;  // P(A > B)
  Interval p_improvement_ci;   // percentile bootstrap
  double mean_difference = 0;  // mean(A) - mean(B)
  // Welch t interval: mean_difference -+ t(df) sqrt(va/na + vb/nb); unset
  // when both sides are constant (the standard error is 0).
  std::optional<Interval> mean_difference_ci;
  std::optional<double> welch_df;
  Interval mean_difference_bootstrap_ci;  // percentile bootstrap
  // Per side, for the two-sided Welch test at alpha with the measured SDs
  // to detect `delta` with `power`; unset (see notes) when delta is 0 or
  // both SDs are 0.
  double delta = 0;
  std::optional<int64_t> runs_needed;
  CompareOptions options;
  std::vector<std::string> notes;  // why something is unset
};

// The bootstrap resamples A and B independently (with replacement, from a
// 64-bit Mersenne Twister seeded with options.seed), `resamples` times;
// P(A > B) and the mean difference are computed on the same resamples.
// Throws for fewer than 2 values on a side, a value that is not finite,
// both sides constant and equal, or options out of range.
PairComparison compare(Sample a, Sample b, const CompareOptions& options = {});

// compare() of two groups of collected runs (RunValue::group): `a` and `b`
// name them. Throws Error(kNotFound) naming the groups there are when one
// has no run, Error(kUsage) when a and b are the same group.
PairComparison compare_groups(const std::vector<RunValue>& values, const std::string& a,
                              const std::string& b, const CompareOptions& options = {});

}  // namespace trainscope::stats
