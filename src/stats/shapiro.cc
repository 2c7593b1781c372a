// Shapiro-Wilk W test: Royston's algorithm AS R94 (Applied Statistics 44(4),
// 1995), computed in double precision with exact normal quantiles.
#include <algorithm>
#include <array>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <numbers>

#include "stats_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/stats/stats.h"

namespace trainscope::stats {

using core::ErrorKind;
using core::fail;

namespace {

template <size_t N>
double poly(const std::array<double, N>& c, double x) {
  double r = 0;
  for (size_t i = N; i-- > 0;) r = r * x + c[i];
  return r;
}

// The coefficients a_1..a_{n/2} of the W statistic (positive).
std::vector<double> coefficients(int n) {
  if (n == 3) return {std::sqrt(0.5)};
  constexpr std::array<double, 6> kC1{0.0, 0.221157, -0.147981, -2.071190, 4.434685, -2.706056};
  constexpr std::array<double, 6> kC2{0.0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633};
  boost::math::normal normal;
  int half = n / 2;
  std::vector<double> m(half);
  double summ2 = 0;
  for (int i = 0; i < half; ++i) {
    m[i] = boost::math::quantile(normal, (i + 1 - 0.375) / (n + 0.25));
    summ2 += m[i] * m[i];
  }
  summ2 *= 2;
  double ssumm2 = std::sqrt(summ2), rsn = 1 / std::sqrt(static_cast<double>(n));
  std::vector<double> a(half);
  a[0] = poly(kC1, rsn) - m[0] / ssumm2;
  int first = 1;
  double fac;
  if (n > 5) {
    first = 2;
    a[1] = -m[1] / ssumm2 + poly(kC2, rsn);
    fac = std::sqrt((summ2 - 2 * m[0] * m[0] - 2 * m[1] * m[1]) /
                    (1 - 2 * a[0] * a[0] - 2 * a[1] * a[1]));
  } else {
    fac = std::sqrt((summ2 - 2 * m[0] * m[0]) / (1 - 2 * a[0] * a[0]));
  }
  for (int i = first; i < half; ++i) a[i] = -m[i] / fac;
  return a;
}

// 1 - W as the squared correlation of the sorted data with the coefficients,
// computed as (1 - r)(1 + r)-style to keep precision when W is near 1.
double one_minus_w(const std::vector<double>& x, const std::vector<double>& a) {
  int n = static_cast<int>(x.size());
  double range = x.back() - x.front();
  auto coef = [&](int i) {  // coefficient of x[i], antisymmetric about the middle
    int j = n - 1 - i;
    if (i == j) return 0.0;
    return i < j ? -a[i] : a[j];
  };
  double sa = 0, sx = 0;
  for (int i = 0; i < n; ++i) {
    sa += coef(i);
    sx += x[i] / range;
  }
  sa /= n;
  sx /= n;
  double ssa = 0, ssx = 0, sax = 0;
  for (int i = 0; i < n; ++i) {
    double asa = coef(i) - sa, xsx = x[i] / range - sx;
    ssa += asa * asa;
    ssx += xsx * xsx;
    sax += asa * xsx;
  }
  double r = std::sqrt(ssa * ssx);
  return (r - sax) * (r + sax) / (ssa * ssx);
}

double p_value(int n, double w1) {
  double w = 1 - w1;
  if (n == 3) {
    double p = 6 / std::numbers::pi * (std::asin(std::sqrt(w)) - std::numbers::pi / 3);
    return std::max(p, 0.0);
  }
  double y = std::log(w1), ln = std::log(static_cast<double>(n)), m, s;
  if (n <= 11) {
    double gamma = poly(std::array<double, 2>{-2.273, 0.459}, n);
    if (y >= gamma) return 1e-99;  // W this small: far below any tabulated level
    y = -std::log(gamma - y);
    m = poly(std::array<double, 4>{0.5440, -0.39978, 0.025054, -6.714e-4}, n);
    s = std::exp(poly(std::array<double, 4>{1.3822, -0.77857, 0.062767, -0.0020322}, n));
  } else {
    m = poly(std::array<double, 4>{-1.5861, -0.31082, -0.083751, 0.0038915}, ln);
    s = std::exp(poly(std::array<double, 3>{-0.4803, -0.082676, 0.0030302}, ln));
  }
  return boost::math::cdf(boost::math::complement(boost::math::normal(), (y - m) / s));
}

}  // namespace

std::vector<double> shapiro_checked_sorted(Sample sample) {
  require_finite(sample, "sample");
  size_t n = sample.size();
  if (n < 3 || n > 5000)
    fail(ErrorKind::kUsage, "{} values: the Shapiro-Wilk test takes 3 to 5000", n);
  std::vector<double> x(sample.begin(), sample.end());
  std::sort(x.begin(), x.end());
  if (x.back() == x.front())
    fail(ErrorKind::kUsage, "every value is {}: the Shapiro-Wilk test is undefined", x.front());
  return x;
}

TestResult shapiro_wilk(Sample sample) {
  std::vector<double> x = shapiro_checked_sorted(sample);
  int n = static_cast<int>(x.size());
  double mid = x[n / 2];  // centre the data, as SciPy does, before scaling by the range
  for (double& v : x) v -= mid;
  double w1 = one_minus_w(x, coefficients(n));
  return {"Shapiro-Wilk W", 1 - w1, p_value(n, w1), {}, {}};
}

}  // namespace trainscope::stats
