// Comparing two configurations by their runs: P(A > B), the mean
// difference, and the runs a Welch t-test needs.
#include "trainscope/stats/compare.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "stats_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::stats {

using core::ErrorKind;
using core::fail;
namespace bm = boost::math;

namespace {

constexpr int64_t kMaxRuns = 1000000000;

// P(a > b) + 0.5 P(a = b) of two sorted samples, by one merge.
double auc_sorted(const std::vector<double>& a, const std::vector<double>& b) {
  double wins = 0;
  size_t below = 0, upto = 0;  // b[0, below) < x, b[0, upto) <= x
  for (double x : a) {
    while (below < b.size() && b[below] < x) ++below;
    upto = std::max(upto, below);
    while (upto < b.size() && b[upto] <= x) ++upto;
    wins += below + 0.5 * (upto - below);
  }
  return wins / (static_cast<double>(a.size()) * b.size());
}

double plain_mean(const std::vector<double>& x) {
  return std::accumulate(x.begin(), x.end(), 0.0) / x.size();
}

void check_options(const CompareOptions& o) {
  if (!(o.confidence > 0 && o.confidence < 1))
    fail(ErrorKind::kUsage, "confidence is {}: give a level between 0 and 1, e.g. 0.95",
         o.confidence);
  if (o.resamples < 100) fail(ErrorKind::kUsage, "resamples is {}: use at least 100", o.resamples);
  if (!(o.alpha > 0 && o.alpha < 1))
    fail(ErrorKind::kUsage, "alpha is {}: give a level between 0 and 1, e.g. 0.05", o.alpha);
  if (!(o.power > o.alpha && o.power < 1))
    fail(ErrorKind::kUsage, "power is {}: give a probability above alpha ({}) and below 1", o.power,
         o.alpha);
  if (o.delta && (!std::isfinite(*o.delta) || *o.delta == 0))
    fail(ErrorKind::kUsage, "delta is {}: give the non-zero difference the runs should detect",
         *o.delta);
}

// Percentile bootstrap intervals of P(A > B) and of the mean difference,
// A and B resampled independently, both statistics on the same resamples.
void bootstrap(Sample a, Sample b, PairComparison& c) {
  const CompareOptions& o = c.options;
  std::mt19937_64 rng(o.seed);
  // Index from the top bits of a 64-bit draw: the same on every platform.
  auto draw = [&rng](Sample x, std::vector<double>& out) {
    for (double& d : out)
      d = x[static_cast<size_t>((static_cast<unsigned __int128>(rng()) * x.size()) >> 64)];
  };
  std::vector<double> ra(a.size()), rb(b.size()), auc(o.resamples), diff(o.resamples);
  for (int r = 0; r < o.resamples; ++r) {
    draw(a, ra);
    draw(b, rb);
    diff[r] = plain_mean(ra) - plain_mean(rb);
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    auc[r] = auc_sorted(ra, rb);
  }
  double lo = (1 - o.confidence) / 2;
  c.p_improvement_ci = {core::percentile(auc, lo), core::percentile(auc, 1 - lo)};
  c.mean_difference_bootstrap_ci = {core::percentile(diff, lo), core::percentile(diff, 1 - lo)};
}

void welch_interval(PairComparison& c) {
  double va = *c.a.variance / c.a.n, vb = *c.b.variance / c.b.n;
  if (va + vb == 0) {
    c.notes.push_back("both sides are constant: the Welch interval is undefined");
    return;
  }
  double df = (va + vb) * (va + vb) / (va * va / (c.a.n - 1) + vb * vb / (c.b.n - 1));
  double h = t_quantile(df, 0.5 + c.options.confidence / 2) * std::sqrt(va + vb);
  c.welch_df = df;
  c.mean_difference_ci = Interval{c.mean_difference - h, c.mean_difference + h};
}

void plan_runs(PairComparison& c) {
  const CompareOptions& o = c.options;
  c.delta = o.delta ? std::fabs(*o.delta) : std::fabs(c.mean_difference);
  if (c.delta == 0)
    return c.notes.push_back(
        "the means are equal: give the difference to detect (delta) to plan the runs");
  if (*c.a.sd == 0 && *c.b.sd == 0)
    return c.notes.push_back("both sides are constant: a t-test has no noise to plan against");
  c.runs_needed = runs_needed(c.delta, *c.a.sd, *c.b.sd, o.alpha, o.power);
}

}  // namespace

double probability_of_improvement(Sample a, Sample b) {
  require_finite(a, "A");
  require_finite(b, "B");
  std::vector<double> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return auc_sorted(sa, sb);
}

double welch_power(double delta, double sd_a, double sd_b, int64_t n, double alpha) {
  if (n < 2) fail(ErrorKind::kUsage, "{} run(s) per side: a t-test needs at least 2", n);
  if (!(alpha > 0 && alpha < 1))
    fail(ErrorKind::kUsage, "alpha is {}: give a level between 0 and 1, e.g. 0.05", alpha);
  double va = sd_a * sd_a, vb = sd_b * sd_b;
  if (!(va + vb > 0) || !std::isfinite(va + vb) || !std::isfinite(delta))
    fail(ErrorKind::kUsage, "SDs {} and {}, delta {}: power needs finite values and some noise",
         sd_a, sd_b, delta);
  double nd = static_cast<double>(n);
  double df = (nd - 1) * (va + vb) * (va + vb) / (va * va + vb * vb);
  double lambda = delta / std::sqrt((va + vb) / nd);
  double t = bm::quantile(bm::complement(bm::students_t(df), alpha / 2));
  bm::non_central_t nct(df, lambda);
  return bm::cdf(bm::complement(nct, t)) + bm::cdf(nct, -t);
}

int64_t runs_needed(double delta, double sd_a, double sd_b, double alpha, double power) {
  if (!std::isfinite(delta) || delta == 0)
    fail(ErrorKind::kUsage, "delta is {}: give the non-zero difference the runs should detect",
         delta);
  if (!(power > alpha && power < 1))
    fail(ErrorKind::kUsage, "power is {}: give a probability above alpha ({}) and below 1", power,
         alpha);
  auto enough = [&](int64_t n) { return welch_power(delta, sd_a, sd_b, n, alpha) >= power; };
  if (enough(2)) return 2;
  // Power grows with n: double until enough, then bisect.
  int64_t lo = 2, hi = 4;
  while (!enough(hi)) {
    lo = hi;
    if (hi >= kMaxRuns)
      fail(ErrorKind::kUsage,
           "detecting {} with SDs {} and {} needs more than {} runs per side: the difference is "
           "too small for this noise",
           delta, sd_a, sd_b, kMaxRuns);
    hi = std::min(2 * hi, kMaxRuns);
  }
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (enough(mid) ? hi : lo) = mid;
  }
  return hi;
}

PairComparison compare(Sample a, Sample b, const CompareOptions& options) {
  check_options(options);
  require_spread(a, 1, options.name_a);
  require_spread(b, 1, options.name_b);
  PairComparison c;
  c.options = options;
  c.a = summarize(a, 1, options.confidence, options.name_a);
  c.b = summarize(b, 1, options.confidence, options.name_b);
  if (c.a.min == c.a.max && c.b.min == c.b.max && c.a.min == c.b.min)
    fail(ErrorKind::kUsage, "every run of {} and {} gave {}: there is no difference to measure",
         options.name_a, options.name_b, c.a.min);
  c.p_improvement = probability_of_improvement(a, b);
  c.mean_difference = c.a.mean - c.b.mean;
  welch_interval(c);
  bootstrap(a, b, c);
  plan_runs(c);
  return c;
}

PairComparison compare_groups(const std::vector<RunValue>& values, const std::string& a,
                              const std::string& b, const CompareOptions& options) {
  if (a == b)
    fail(ErrorKind::kUsage, "A and B are both '{}': compare two different groups", group_text(a));
  std::vector<double> va, vb;
  std::set<std::string> groups;
  for (const RunValue& v : values) {
    groups.insert(v.group);
    if (v.group == a) va.push_back(v.value);
    if (v.group == b) vb.push_back(v.value);
  }
  std::vector<std::string> shown;
  for (const auto& g : groups) shown.push_back(group_text(g));
  for (const auto* name : {&a, &b})
    if (!groups.count(*name))
      fail(ErrorKind::kNotFound, "no run is in group '{}'; the groups are: {}", group_text(*name),
           fmt::format("{}", fmt::join(shown, ", ")));
  CompareOptions o = options;
  o.name_a = "group '" + group_text(a) + "'";
  o.name_b = "group '" + group_text(b) + "'";
  return compare(va, vb, o);
}

}  // namespace trainscope::stats
