// Shapiro-Wilk as SciPy 1.10's scipy.stats.shapiro computes it: the data
// centred on their median in double, then Royston's AS R94 in single
// precision with AS 111's normal quantile and AS 66's normal tail. Every
// operation is in the order of that algorithm's published form, so the
// result is the same float32 W and p (this file is built without FMA
// contraction). Use it to reproduce a number someone computed with SciPy;
// shapiro.cc's double-precision version is the more accurate one.
#include <algorithm>
#include <array>
#include <cmath>

#include "stats_internal.h"
#include "trainscope/core/error.h"
#include "trainscope/stats/stats.h"

namespace trainscope::stats {

namespace {

// AS 181.2: c[0] + x (c[1] + x (c[2] + ...)), evaluated from the top.
template <size_t N>
float poly(const std::array<float, N>& c, float x) {
  static_assert(N >= 2);
  float p = x * c[N - 1];
  for (size_t j = N - 2; j >= 1; --j) p = (p + c[j]) * x;
  return c[0] + p;
}

// AS 111: the normal quantile in single precision.
float ppnd(float p) {
  float q = p - 0.5f;
  if (std::fabs(q) <= 0.42f) {
    float r = q * q;
    return q *
           (((-25.44106049637f * r + 41.39119773534f) * r + -18.61500062529f) * r +
            2.50662823884f) /
           ((((3.13082909833f * r + -21.06224101826f) * r + 23.08336743743f) * r +
             -8.47351093090f) *
                r +
            1.0f);
  }
  float r = q > 0 ? 1.0f - p : p;
  if (r <= 0) return 0;
  r = std::sqrt(-std::log(r));
  float z = (((2.32121276858f * r + 4.85014127135f) * r + -2.29796479134f) * r + -2.78718931138f) /
            ((1.63706781897f * r + 3.54388924762f) * r + 1.0f);
  return q < 0 ? -z : z;
}

// AS 66: the upper tail of the standard normal, in double.
double alnorm_upper(double x) {
  bool up = true;
  double z = x;
  if (z < 0) {
    up = false;
    z = -z;
  }
  double tail;
  if (!(z <= 7.0 || (up && z <= 38.0))) {
    tail = 0;
  } else {
    double y = 0.5 * z * z;
    if (z <= 1.28) {
      tail = 0.5 -
             z * (0.398942280444 -
                  0.399903438504 * y /
                      (y + 5.75885480458 -
                       29.8213557808 / (y + 2.62433121679 + 48.6959930692 / (y + 5.92885724438))));
    } else {
      tail = 0.398942280385 * std::exp(-y) /
             (z - 3.8052e-8 +
              1.00000615302 /
                  (z + 3.98064794e-4 +
                   1.98615381364 /
                       (z - 0.151679116635 +
                        5.29330324926 / (z + 4.8385912808 -
                                         15.1508972451 / (z + 0.742380924027 +
                                                          30.789933034 / (z + 3.99019417011))))));
    }
  }
  return up ? tail : 1.0 - tail;
}

std::vector<float> coefficients(int n) {
  if (n == 3) return {0.70711f};
  // (std::array<float, 6>: every literal is a float)
  constexpr std::array kC1{0.0f, 0.221157f, -0.147981f, -2.07119f, 4.434685f, -2.706056f};
  constexpr std::array kC2{0.0f, 0.042981f, -0.293762f, -1.752461f, 5.682633f, -3.582633f};
  int half = n / 2;
  float an25 = static_cast<float>(n) + 0.25f, summ2 = 0;
  std::vector<float> a(half);
  for (int i = 0; i < half; ++i) {
    a[i] = ppnd((static_cast<float>(i + 1) - 0.375f) / an25);
    summ2 = summ2 + a[i] * a[i];
  }
  summ2 = summ2 * 2.0f;
  float ssumm2 = std::sqrt(summ2), rsn = 1.0f / std::sqrt(static_cast<float>(n));
  float a1 = poly(kC1, rsn) - a[0] / ssumm2, fac;
  int first;
  if (n > 5) {
    first = 2;
    float a2 = -a[1] / ssumm2 + poly(kC2, rsn);
    fac = std::sqrt((summ2 - 2.0f * (a[0] * a[0]) - 2.0f * (a[1] * a[1])) /
                    (1.0f - 2.0f * (a1 * a1) - 2.0f * (a2 * a2)));
    a[1] = a2;
  } else {
    first = 1;
    fac = std::sqrt((summ2 - 2.0f * (a[0] * a[0])) / (1.0f - 2.0f * (a1 * a1)));
  }
  a[0] = a1;
  for (int i = first; i < half; ++i) a[i] = -a[i] / fac;
  return a;
}

// 1 - W as the squared correlation of the range-scaled data with the
// antisymmetric coefficients.
float one_minus_w(const std::vector<float>& x, const std::vector<float>& a) {
  int n = static_cast<int>(x.size());
  float range = x[n - 1] - x[0];
  auto coef = [&](int i) {  // 1-based i and its mirror j = n + 1 - i
    int j = n + 1 - i;
    if (i == j) return 0.0f;
    return static_cast<float>(i < j ? -1 : 1) * a[std::min(i, j) - 1];
  };
  float sx = x[0] / range, sa = -a[0];
  for (int i = 2; i <= n; ++i) {
    sx = sx + x[i - 1] / range;
    if (i != n + 1 - i) sa = sa + coef(i);
  }
  sa = sa / static_cast<float>(n);
  sx = sx / static_cast<float>(n);
  float ssa = 0, ssx = 0, sax = 0;
  for (int i = 1; i <= n; ++i) {
    float asa = coef(i) - sa, xsx = x[i - 1] / range - sx;
    ssa = ssa + asa * asa;
    ssx = ssx + xsx * xsx;
    sax = sax + asa * xsx;
  }
  float r = std::sqrt(ssa * ssx);
  return (r - sax) * (r + sax) / (ssa * ssx);
}

float p_value(int n, float w1) {
  if (n == 3) return 1.909859f * (std::asin(std::sqrt(1.0f - w1)) - 1.047198f);
  float an = static_cast<float>(n), y = std::log(w1), ln = std::log(an), m, s;
  if (n <= 11) {
    float gamma = poly(std::array<float, 2>{-2.273f, 0.459f}, an);
    if (y >= gamma) return 1e-19f;
    y = -std::log(gamma - y);
    m = poly(std::array<float, 4>{0.544f, -0.39978f, 0.025054f, -6.714e-4f}, an);
    s = std::exp(poly(std::array<float, 4>{1.3822f, -0.77857f, 0.062767f, -0.0020322f}, an));
  } else {
    m = poly(std::array<float, 4>{-1.5861f, -0.31082f, -0.083751f, 0.0038915f}, ln);
    s = std::exp(poly(std::array<float, 3>{-0.4803f, -0.082676f, 0.0030302f}, ln));
  }
  return static_cast<float>(alnorm_upper(static_cast<double>((y - m) / s)));
}

}  // namespace

TestResult shapiro_wilk_as_scipy(Sample sample) {
  std::vector<double> sorted = shapiro_checked_sorted(sample);
  int n = static_cast<int>(sorted.size());
  double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;  // np.median
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(sorted[i] - median);
  float w1 = one_minus_w(x, coefficients(n));
  return {"Shapiro-Wilk W", 1.0f - w1, p_value(n, w1), {}, {}};
}

}  // namespace trainscope::stats
