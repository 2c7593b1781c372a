// Descriptive statistics, Diff% and the bootstrap interval of the SD.
#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>
#include <random>

#include "stats_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/stats/stats.h"

namespace trainscope::stats {

using core::ErrorKind;
using core::fail;

void require_finite(Sample x, const std::string& what) {
  if (x.empty()) fail(ErrorKind::kUsage, "{} is empty: give at least one value", what);
  for (double v : x) {
    if (!std::isfinite(v))
      fail(ErrorKind::kUsage, "{} holds {}: drop the runs whose value is not finite", what, v);
  }
}

void require_spread(Sample x, int ddof, const std::string& what) {
  require_finite(x, what);
  if (static_cast<int64_t>(x.size()) <= ddof)
    fail(ErrorKind::kUsage, "{} has {} value(s): its spread needs at least {}", what, x.size(),
         ddof + 1);
}

double mean(Sample x) {
  require_finite(x, "sample");
  // Two passes: the mean of the residuals corrects the first sum's rounding.
  double m = std::accumulate(x.begin(), x.end(), 0.0) / x.size();
  double r = 0;
  for (double v : x) r += v - m;
  return m + r / x.size();
}

double sum_squares(Sample x, double m) {
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return ss;
}

double variance(Sample x, int ddof) {
  require_spread(x, ddof, "sample");
  return sum_squares(x, mean(x)) / (x.size() - ddof);
}

double sd(Sample x, int ddof) { return std::sqrt(variance(x, ddof)); }

double t_quantile(double df, double p) {
  return boost::math::quantile(boost::math::students_t(df), p);
}

Summary summarize(Sample x, int ddof, double confidence, const std::string& what) {
  require_finite(x, what);
  if (ddof < 0) fail(ErrorKind::kUsage, "ddof is {}: use 0 (population) or 1 (sample)", ddof);
  Summary s;
  s.n = static_cast<int64_t>(x.size());
  s.ddof = ddof;
  s.mean = mean(x);
  auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  s.min = *lo;
  s.max = *hi;
  if (s.n <= ddof) return s;
  s.variance = sum_squares(x, s.mean) / (s.n - ddof);
  s.sd = std::sqrt(*s.variance);
  s.sem = *s.sd / std::sqrt(static_cast<double>(s.n));
  if (s.n >= 2) {
    // The t interval uses the sample SD whatever ddof the report shows.
    double sem1 = std::sqrt(sum_squares(x, s.mean) / (s.n - 1) / s.n);
    double h = t_quantile(s.n - 1, 0.5 + confidence / 2) * sem1;
    s.ci_low = s.mean - h;
    s.ci_high = s.mean + h;
  }
  if (s.mean != 0) s.cv = *s.sd / std::fabs(s.mean);
  return s;
}

double diff_percent(Sample x, double reference) {
  if (reference == 0 || !std::isfinite(reference))
    fail(ErrorKind::kUsage, "the reference value is {}: Diff% needs a finite, non-zero reference",
         reference);
  return (mean(x) - reference) / std::fabs(reference) * 100.0;
}

Interval bootstrap_sd_ci(Sample x, int ddof, int resamples, uint64_t seed, double confidence) {
  require_spread(x, std::max(ddof, 1), "sample");
  if (resamples < 100) fail(ErrorKind::kUsage, "resamples is {}: use at least 100", resamples);
  auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  if (*lo == *hi)
    fail(ErrorKind::kUsage, "every value is {}: the SD is 0 and has no interval", *lo);
  std::mt19937_64 rng(seed);
  std::vector<double> draw(x.size()), sds(resamples);
  for (int r = 0; r < resamples; ++r) {
    // Index from the top bits of a 64-bit draw: the same on every platform.
    for (double& d : draw)
      d = x[static_cast<size_t>((static_cast<unsigned __int128>(rng()) * x.size()) >> 64)];
    double m = std::accumulate(draw.begin(), draw.end(), 0.0) / draw.size();
    sds[r] = std::sqrt(sum_squares(draw, m) / (draw.size() - ddof));
  }
  double a = (1 - confidence) / 2;
  return {core::percentile(sds, a), core::percentile(sds, 1 - a)};
}

}  // namespace trainscope::stats
