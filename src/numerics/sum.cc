// Built with -ffp-contract=off like the map: every addition rounds.
#include <mpfr.h>

#include <cmath>
#include <random>

#include "trainscope/core/error.h"
#include "trainscope/numerics/logmap.h"

namespace trainscope::numerics {
using core::ErrorKind;
using core::fail;

namespace {

float sequential(const float* v, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  return s;
}

// Recursive halving down to blocks of 8, as numpy-style pairwise summation.
float pairwise(const float* v, int64_t n) {
  if (n <= 8) return sequential(v, n);
  int64_t half = n / 2;
  return pairwise(v, half) + pairwise(v + half, n - half);
}

// What T threads of a parallel reduction compute: T contiguous chunks, each
// summed sequentially, then the partial sums added in thread order.
float blocked(const float* v, int64_t n, int threads) {
  float total = 0;
  for (int t = 0; t < threads; ++t) {
    int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    total += sequential(v + begin, end - begin);
  }
  return total;
}

float kahan(const float* v, int64_t n) {
  float s = 0, c = 0;
  for (int64_t i = 0; i < n; ++i) {
    float y = v[i] - c;
    float t = s + y;
    c = (t - s) - y;
    s = t;
  }
  return s;
}

}  // namespace

SumReport run_sum(int64_t n, uint64_t seed) {
  if (n <= 0 || n > 100'000'000)
    fail(ErrorKind::kUsage, "--n must be in [1, 100000000] (got {})", n);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> mant(0.5, 1.0);
  std::uniform_int_distribution<int> expo(-12, 12);
  std::bernoulli_distribution neg(0.3);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    double m = std::ldexp(mant(gen), expo(gen));
    x = static_cast<float>(neg(gen) ? -m : m);
  }
  // Exact sum: every float32 is an integer multiple of 2^-149 below 2^128,
  // so 277 bits plus log2(n) hold any partial sum exactly.
  mpfr_t exact;
  mpfr_init2(exact, 320);
  mpfr_set_zero(exact, 1);
  for (float x : v) mpfr_add_d(exact, exact, x, MPFR_RNDN);
  SumReport rep;
  rep.n = n;
  rep.seed = seed;
  rep.exact = mpfr_get_d(exact, MPFR_RNDN);
  float exact32 = mpfr_get_flt(exact, MPFR_RNDN);
  mpfr_clear(exact);
  const double ulp = std::fabs(std::nextafter(exact32, INFINITY) - exact32);
  auto add = [&](std::string method, float value) {
    double err = std::fabs(static_cast<double>(value) - rep.exact);
    rep.results.push_back({std::move(method), value, err, err / ulp});
  };
  add("sequential", sequential(v.data(), n));
  add("pairwise", pairwise(v.data(), n));
  for (int t : {1, 2, 4, 8}) add("blocked-" + std::to_string(t), blocked(v.data(), n, t));
  add("kahan", kahan(v.data(), n));
  add("exact rounded to float32", exact32);
  return rep;
}

}  // namespace trainscope::numerics
