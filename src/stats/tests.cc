// Hypothesis tests, multiple-comparison corrections and effect sizes.
#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>

#include "stats_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/stats/stats.h"

namespace trainscope::stats {

using core::ErrorKind;
using core::fail;
namespace bm = boost::math;

namespace {

double t_two_sided(double t, double df) {
  return 2 * bm::cdf(bm::complement(bm::students_t(df), std::fabs(t)));
}

double f_upper(double f, double df1, double df2) {
  return bm::cdf(bm::complement(bm::fisher_f(df1, df2), f));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

void require_not_constant(const std::vector<std::vector<double>>& groups, const char* test) {
  for (const auto& g : groups)
    for (double v : g)
      if (v != groups[0][0]) return;
  fail(ErrorKind::kUsage, "every value is {}: {} is undefined on constant data", groups[0][0],
       test);
}

}  // namespace

void require_groups(const std::vector<std::vector<double>>& groups, size_t min_size) {
  if (groups.size() < 2)
    fail(ErrorKind::kUsage, "{} group(s): comparing groups needs at least 2", groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    require_finite(groups[i], fmt::format("group {}", i + 1));
    if (groups[i].size() < min_size)
      fail(ErrorKind::kUsage, "group {} has {} value(s): this test needs at least {} per group",
           i + 1, groups[i].size(), min_size);
  }
}

OneWay one_way(const std::vector<std::vector<double>>& groups) {
  OneWay w;
  w.k = static_cast<int>(groups.size());
  double total = 0;
  for (const auto& g : groups) {
    w.n += static_cast<int>(g.size());
    total += std::accumulate(g.begin(), g.end(), 0.0);
  }
  w.grand_mean = total / w.n;
  for (const auto& g : groups) {
    double m = mean(g);
    w.ss_between += g.size() * (m - w.grand_mean) * (m - w.grand_mean);
    w.ss_within += sum_squares(g, m);
  }
  return w;
}

TestResult t_test_one_sample(Sample x, double mu) {
  require_spread(x, 1, "sample");
  double s = sd(x, 1);
  if (s == 0) fail(ErrorKind::kUsage, "every value is {}: the t-test is undefined", x[0]);
  double df = x.size() - 1.0;
  double t = (mean(x) - mu) / (s / std::sqrt(static_cast<double>(x.size())));
  return {"one-sample t", t, t_two_sided(t, df), df, {}};
}

TestResult welch_t_test(Sample a, Sample b) {
  require_spread(a, 1, "first sample");
  require_spread(b, 1, "second sample");
  double va = variance(a, 1) / a.size(), vb = variance(b, 1) / b.size();
  if (va + vb == 0) fail(ErrorKind::kUsage, "both samples are constant: the t-test is undefined");
  double t = (mean(a) - mean(b)) / std::sqrt(va + vb);
  double df = (va + vb) * (va + vb) / (va * va / (a.size() - 1) + vb * vb / (b.size() - 1));
  return {"Welch t", t, t_two_sided(t, df), df, {}};
}

namespace {

// The one-way F test: between-group over within-group mean square.
TestResult f_test(const std::vector<std::vector<double>>& groups, const std::string& name) {
  OneWay w = one_way(groups);
  if (w.n <= w.k)
    fail(ErrorKind::kUsage, "{} values in {} groups: {} needs more values than groups", w.n, w.k,
         name);
  // Spread within the groups at the level of rounding (e.g. the absolute
  // deviations of bit-identical runs) is no spread: F would divide by noise.
  double scale = 0;
  for (const auto& g : groups)
    for (double v : g) scale = std::max(scale, std::fabs(v));
  if (w.ss_within <= 1e-24 * scale * scale * w.n)
    fail(ErrorKind::kUsage, "no spread within any group: {} is undefined", name);
  double df1 = w.k - 1, df2 = w.n - w.k;
  double f = (w.ss_between / df1) / (w.ss_within / df2);
  return {name, f, f_upper(f, df1, df2), df1, df2};
}

}  // namespace

TestResult anova_oneway(const std::vector<std::vector<double>>& groups) {
  require_groups(groups);
  return f_test(groups, "one-way ANOVA");
}

std::vector<double> rank_average(Sample x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    for (size_t t = i; t <= j; ++t) ranks[order[t]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return ranks;
}

TestResult kruskal_wallis(const std::vector<std::vector<double>>& groups) {
  require_groups(groups);
  require_not_constant(groups, "the Kruskal-Wallis test");
  std::vector<double> all;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  std::vector<double> r = rank_average(all);
  double n = all.size(), h = 0;
  size_t at = 0;
  for (const auto& g : groups) {
    double s = std::accumulate(r.begin() + at, r.begin() + at + g.size(), 0.0);
    h += s * s / g.size();
    at += g.size();
  }
  h = 12.0 / (n * (n + 1)) * h - 3 * (n + 1);
  std::sort(all.begin(), all.end());
  double ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    double t = j - i;
    ties += t * t * t - t;
    i = j;
  }
  h /= 1 - ties / (n * n * n - n);
  double df = groups.size() - 1.0;
  return {"Kruskal-Wallis H", h, bm::cdf(bm::complement(bm::chi_squared(df), h)), df, {}};
}

TestResult levene(const std::vector<std::vector<double>>& groups, const std::string& center) {
  if (center != "median" && center != "mean")
    fail(ErrorKind::kUsage, "center is '{}': use median (Brown-Forsythe) or mean (Levene)", center);
  require_groups(groups);
  // With two values a group's deviations from its centre are equal: the
  // test would compare rounding errors.
  if (std::all_of(groups.begin(), groups.end(), [](const auto& g) { return g.size() <= 2; }))
    fail(ErrorKind::kUsage, "every group has 1 or 2 values: {} needs a group of at least 3",
         center == "median" ? "Brown-Forsythe" : "Levene");
  std::vector<std::vector<double>> z;
  for (const auto& g : groups) {
    double c = center == "median" ? median(g) : mean(g);
    auto& d = z.emplace_back();
    for (double v : g) d.push_back(std::fabs(v - c));
  }
  return f_test(z, center == "median" ? "Brown-Forsythe" : "Levene");
}

std::vector<double> bonferroni(std::span<const double> p) {
  std::vector<double> out;
  for (double v : p) out.push_back(std::min(1.0, v * p.size()));
  return out;
}

std::vector<double> holm(std::span<const double> p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size());
  double running = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    running = std::max(running, std::min(1.0, (p.size() - i) * p[order[i]]));
    out[order[i]] = running;
  }
  return out;
}

double cohens_d(Sample a, Sample b) {
  require_spread(a, 1, "first sample");
  require_spread(b, 1, "second sample");
  double pooled = ((a.size() - 1) * variance(a, 1) + (b.size() - 1) * variance(b, 1)) /
                  (a.size() + b.size() - 2.0);
  if (pooled == 0) fail(ErrorKind::kUsage, "both samples are constant: Cohen's d is undefined");
  return (mean(a) - mean(b)) / std::sqrt(pooled);
}

double hedges_g(Sample a, Sample b) {
  return cohens_d(a, b) * (1 - 3.0 / (4.0 * (a.size() + b.size()) - 9));
}

double eta_squared(const std::vector<std::vector<double>>& groups) {
  require_groups(groups);
  require_not_constant(groups, "eta squared");
  OneWay w = one_way(groups);
  return w.ss_between / (w.ss_between + w.ss_within);
}

double omega_squared(const std::vector<std::vector<double>>& groups) {
  require_groups(groups);
  require_not_constant(groups, "omega squared");
  OneWay w = one_way(groups);
  if (w.n <= w.k) fail(ErrorKind::kUsage, "omega squared needs more values than groups");
  double msw = w.ss_within / (w.n - w.k);
  return (w.ss_between - (w.k - 1) * msw) / (w.ss_between + w.ss_within + msw);
}

double epsilon_squared(const std::vector<std::vector<double>>& groups) {
  TestResult h = kruskal_wallis(groups);
  size_t n = 0;
  for (const auto& g : groups) n += g.size();
  return h.statistic / (n - 1.0);
}

}  // namespace trainscope::stats
