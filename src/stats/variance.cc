// Variance components of a one-way random-effects layout.
#include "trainscope/stats/variance.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <cmath>

#include "stats_internal.h"
#include "trainscope/core/error.h"

namespace trainscope::stats {

using core::ErrorKind;
using core::fail;
namespace bm = boost::math;

namespace {

double chi2_q(double df, double p) { return bm::quantile(bm::chi_squared(df), p); }
double f_q(double df1, double df2, double p) { return bm::quantile(bm::fisher_f(df1, df2), p); }

// Modified large-sample interval of (MSB - MSW) / n0 (Graybill and Wang
// 1980; Burdick and Graybill 1992, section 3.3), truncated at 0.
Interval between_interval(const VarianceComponents& v, double alpha) {
  double n1 = v.df_between, n2 = v.df_within;
  double f1 = chi2_q(n1, 1 - alpha / 2) / n1, f2 = chi2_q(n1, alpha / 2) / n1;
  double f3 = chi2_q(n2, 1 - alpha / 2) / n2, f4 = chi2_q(n2, alpha / 2) / n2;
  double f5 = f_q(n1, n2, 1 - alpha / 2), f6 = f_q(n1, n2, alpha / 2);
  double g1 = 1 - 1 / f1, h1 = 1 / f2 - 1, g2 = 1 - 1 / f3, h2 = 1 / f4 - 1;
  double g12 = ((f5 - 1) * (f5 - 1) - g1 * g1 * f5 * f5 - h2 * h2) / f5;
  double h12 = ((1 - f6) * (1 - f6) - h1 * h1 * f6 * f6 - g2 * g2) / f6;
  double b = v.ms_between, w = v.ms_within;
  double vl = g1 * g1 * b * b + h2 * h2 * w * w + g12 * b * w;
  double vu = h1 * h1 * b * b + g2 * g2 * w * w + h12 * b * w;
  return {std::max(0.0, (b - w - std::sqrt(std::max(vl, 0.0))) / v.n0),
          std::max(0.0, (b - w + std::sqrt(std::max(vu, 0.0))) / v.n0)};
}

}  // namespace

VarianceComponents variance_components(const std::vector<std::vector<double>>& cells,
                                       double confidence) {
  require_groups(cells);
  OneWay w = one_way(cells);
  if (w.n <= w.k)
    fail(ErrorKind::kUsage, "{} runs in {} cells: give at least 2 replicates in some cell", w.n,
         w.k);
  if (w.ss_within + w.ss_between == 0)
    fail(ErrorKind::kUsage, "every run gave the same value: there is no variance to divide");
  VarianceComponents v;
  v.k = w.k;
  v.n_total = w.n;
  v.confidence = confidence;
  double sum_n2 = 0;
  for (const auto& c : cells) sum_n2 += static_cast<double>(c.size()) * c.size();
  v.n0 = (w.n - sum_n2 / w.n) / (w.k - 1);
  v.df_between = w.k - 1;
  v.df_within = w.n - w.k;
  v.ms_between = w.ss_between / v.df_between;
  v.ms_within = w.ss_within / v.df_within;
  v.s2_within = v.ms_within;
  v.s2_between_raw = (v.ms_between - v.ms_within) / v.n0;
  v.s2_between = std::max(0.0, v.s2_between_raw);
  v.icc = v.s2_between / (v.s2_between + v.s2_within);
  double alpha = 1 - confidence;
  if (v.ms_within > 0) {
    v.f = v.ms_between / v.ms_within;
    v.p_value = bm::cdf(bm::complement(bm::fisher_f(v.df_between, v.df_within), v.f));
    v.s2_within_ci = {w.ss_within / chi2_q(v.df_within, 1 - alpha / 2),
                      w.ss_within / chi2_q(v.df_within, alpha / 2)};
    v.s2_between_ci = between_interval(v, alpha);
  } else {
    // Replicates repeat exactly: all variance is between cells.
    v.f = INFINITY;
    v.p_value = 0;
    v.s2_between_ci = {v.s2_between, v.s2_between};
  }
  return v;
}

}  // namespace trainscope::stats
