// Statistics over the results of many runs: how large is a result, how much
// of it is noise, and do groups of runs differ.
//
// Torch-free; distributions come from Boost.Math. Every function that a
// sample cannot answer (too few values, a constant sample, NaN) throws
// core::Error(kUsage) saying so instead of returning NaN. Conventions follow
// SciPy, against which tests/stats checks each result: variances take an
// explicit ddof (default 1), p-values are two-sided.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace trainscope::stats {

// A sample: a view of values the caller owns for the call. Every function
// here is pure (any thread) and throws Error(kUsage), naming the problem,
// for input it cannot take.
using Sample = std::span<const double>;

// Mean, spread and range of one sample.
struct Summary {
  int64_t n = 0;
  int ddof = 1;
  double mean = 0;
  double min = 0;
  double max = 0;
  // Unset when n <= ddof (one value): the spread of one value is undefined.
  std::optional<double> variance;
  std::optional<double> sd;
  std::optional<double> sem;     // sd / sqrt(n)
  std::optional<double> ci_low;  // 95% t interval of the mean
  std::optional<double> ci_high;
  std::optional<double> cv;  // sd / |mean|; unset when the mean is 0
};

// Throws when `x` is empty or holds NaN/Inf (naming `what`).
Summary summarize(Sample x, int ddof = 1, double confidence = 0.95,
                  const std::string& what = "sample");

// The mean (two passes, so rounding is corrected). Throws Error(kUsage)
// when `x` is empty or holds NaN/Inf.
double mean(Sample x);
// Throws when x.size() <= ddof.
double variance(Sample x, int ddof = 1);
// sqrt(variance(x, ddof)), with variance's errors.
double sd(Sample x, int ddof = 1);

// (mean(x) - reference) / |reference| * 100. Throws when reference is 0.
double diff_percent(Sample x, double reference);

// A confidence interval [low, high].
struct Interval {
  double low = 0;
  double high = 0;
};

// Percentile bootstrap interval of the SD (ddof): `resamples` resamples
// with replacement drawn from a generator seeded with `seed`, so the same
// input gives the same interval. Throws for fewer than 2 values or a
// constant sample.
Interval bootstrap_sd_ci(Sample x, int ddof = 1, int resamples = 10000, uint64_t seed = 0,
                         double confidence = 0.95);

// A test's statistic and two-sided p-value; df are its degrees of freedom
// where it has them (df2 for F).
struct TestResult {
  std::string test;
  double statistic = 0;
  double p_value = 1;
  std::optional<double> df;
  std::optional<double> df2;
};

// scipy.stats.ttest_1samp(x, mu).
TestResult t_test_one_sample(Sample x, double mu);
// scipy.stats.ttest_ind(a, b, equal_var=False): Welch's t-test.
TestResult welch_t_test(Sample a, Sample b);
// scipy.stats.f_oneway(*groups).
TestResult anova_oneway(const std::vector<std::vector<double>>& groups);
// scipy.stats.kruskal(*groups): H with the tie correction.
TestResult kruskal_wallis(const std::vector<std::vector<double>>& groups);
// scipy.stats.levene(*groups, center=...): "median" is Brown-Forsythe (SciPy's
// default), "mean" is Levene's original.
TestResult levene(const std::vector<std::vector<double>>& groups,
                  const std::string& center = "median");
// Shapiro-Wilk W and p (Royston 1995, AS R94, in double precision), 3 <= n <= 5000.
TestResult shapiro_wilk(Sample x);
// The same test as scipy.stats.shapiro (SciPy 1.10) computes it, in single
// precision: its W and p to the last bit, and off from the double-precision
// version by float32 rounding (about 1e-7 relative in W).
TestResult shapiro_wilk_as_scipy(Sample x);

// Adjusted p-values, in the input's order, each capped at 1.
std::vector<double> bonferroni(std::span<const double> p);
// Holm's step-down adjustment (monotone in the sorted p-values).
std::vector<double> holm(std::span<const double> p);

// Effect sizes. Cohen's d with the pooled SD (ddof 1); Hedges' g is d with
// the small-sample correction J = 1 - 3 / (4 (na + nb) - 9).
double cohens_d(Sample a, Sample b);
// Hedges' g; like cohens_d it throws Error(kUsage) for a sample with fewer
// than 2 values, one holding NaN/Inf, or two constant samples.
double hedges_g(Sample a, Sample b);
// ANOVA's eta squared SS_between / SS_total, and omega squared.
double eta_squared(const std::vector<std::vector<double>>& groups);
// Omega squared; like eta_squared it throws Error(kUsage) for fewer than
// two groups, a value that is not finite or all values equal, and also
// when there are no more values than groups.
double omega_squared(const std::vector<std::vector<double>>& groups);
// Kruskal-Wallis epsilon squared H / (n - 1).
double epsilon_squared(const std::vector<std::vector<double>>& groups);

// Ranks 1..n with ties given their average rank (scipy.stats.rankdata).
std::vector<double> rank_average(Sample x);

}  // namespace trainscope::stats
