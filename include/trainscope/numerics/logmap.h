// The floating-point lab: the logistic map x(n+1) = r x(n) (1 - x(n)),
// computed in several formats, operation orders and with or without FMA,
// against an MPFR reference exact over the whole trajectory (BRIEF §1).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::numerics {

// The storage format of a variant's values: IEEE binary32, binary64, x87
// 80-bit long double, and binary128 (__float128).
enum class Format { kFloat32, kFloat64, kLongDouble, kBinary128 };

// The expression evaluated at each step.
enum class Order {
  kRxTimesOneMinusX,  // (r*x)*(1-x)
  kRTimesXOneMinusX,  // r*(x*(1-x))
  kRxMinusRxx,        // r*x - r*x*x, i.e. t = r*x; t - t*x
};

// One way of computing the map: format, order of operations, FMA, and
// whether libtorch does it (on `device`).
struct Variant {
  std::string name;  // e.g. "float32 (r*x)*(1-x)"
  std::string id;    // e.g. "f32.rx_1mx", used on the command line and in metric keys
  Format format = Format::kFloat64;
  Order order = Order::kRxTimesOneMinusX;
  bool fma = false;                 // explicit std::fma where the expression has a*b+c
  bool wide_intermediates = false;  // float32 storage, double intermediates
  bool torch = false;               // libtorch tensor ops (device below)
  std::string device = "cpu";
};

// What run_logmap computes (checked by validate).
struct LogmapOptions {
  std::string x0 = "0.4";  // decimal text: the reference starts from it exactly
  std::string r = "3.7";
  int64_t steps = 2000;
  std::vector<double> thresholds = {1e-3, 1e-2, 0.1};
  std::vector<std::string> variants;  // ids; empty: all available
  // Variants computed outside this component (libtorch), and how.
  std::vector<Variant> extra_variants;
  std::function<std::vector<double>(const Variant&, const std::string& x0, const std::string& r,
                                    int64_t steps)>
      extra_iterate;
};

// One variant's trajectory and how far it kept to the reference.
struct VariantResult {
  Variant variant;
  std::vector<double> x;               // x[0..steps], widened to double
  std::vector<double> correct_digits;  // per step, -log10(rel. error) clamped to [0, 34]
  std::vector<int64_t> first_over;     // per threshold: first step with |x - ref| > t, or -1
  int64_t digits_gone = -1;            // first step with < 1 correct digit, or -1
  // Loss of correct digits per step while the error grows linearly (from
  // 3 digits below the format's precision down to 3 correct digits):
  // measured from this trajectory, and predicted by the reference's
  // finite-time Lyapunov exponent, mean ln|r (1 - 2 x_k)| / ln 10, over the
  // same steps [window_from, window_to).
  double digits_lost_per_step = 0;
  double predicted_per_step = 0;
  int64_t window_from = -1, window_to = -1;
};

// What run_logmap returns: a plain value.
struct LogmapResult {
  LogmapOptions options;
  int reference_precision = 0;           // bits
  std::vector<double> reference;         // rounded to double for output
  double lyapunov = 0;                   // mean ln|r (1 - 2 x_n)| along the whole reference
  double predicted_digits_per_step = 0;  // lyapunov / ln 10
  std::vector<VariantResult> variants;
};

// Every variant this build can compute (libtorch ones only when linked in).
std::vector<Variant> available_variants();

// Checks the options: r in (0, 4], x0 in [0, 1], 0 < steps <= kMaxSteps,
// known variant ids. Throws Error explaining what is allowed.
void validate(const LogmapOptions& options);
// The most steps validate accepts.
constexpr int64_t kMaxSteps = 100'000;

// MPFR precision (bits) that keeps the reference exact to double over N
// steps: |f'(x)| = |r (1 - 2x)| <= r, so an error grows by at most r per step
// and N steps need N*log2(r) bits beyond the 53 reported, plus a margin.
int reference_precision(double r, int64_t steps);

// Runs everything.
LogmapResult run_logmap(const LogmapOptions& options);

// One variant's trajectory (hardware arithmetic).
std::vector<double> iterate(const Variant& v, const std::string& x0, const std::string& r,
                            int64_t steps);

// The same operation sequence in MPFR at the variant's own precision with
// round-to-nearest-even after every operation (subnormals emulated): the
// trajectory a correct IEEE implementation must produce, bit for bit.
// Supports float32 and float64 variants (with FMA and wide intermediates).
std::vector<double> emulate(const Variant& v, const std::string& x0, const std::string& r,
                            int64_t steps);

// The exact (to double) reference trajectory, computed at `precision` bits.
std::vector<double> reference_trajectory(const std::string& x0, const std::string& r, int64_t steps,
                                         int precision);

// First step n with |a[n] - b[n]| > tol (NaN counts as over), or -1.
int64_t first_divergence(const std::vector<double>& a, const std::vector<double>& b, double tol);

// --- summation ------------------------------------------------------------------

// One summation method's float32 result and its error against the exact
// sum.
struct SumResult {
  std::string method;  // "sequential", "pairwise", "blocked-4", "kahan", ...
  float value = 0;
  double abs_error = 0;  // vs the exact sum
  double ulp_error = 0;  // in float32 ULPs of the exact sum
};

// What run_sum returns: a plain value.
struct SumReport {
  int64_t n = 0;
  uint64_t seed = 0;
  double exact = 0;  // the exact sum rounded to double
  std::vector<SumResult> results;
};

// Sums n float32 values (a reproducible mix of magnitudes and signs drawn
// from `seed`) sequentially, pairwise, blocked as 1, 2, 4 and 8 threads
// would block it, and with Kahan summation, against the exact sum (MPFR).
SumReport run_sum(int64_t n, uint64_t seed);

}  // namespace trainscope::numerics
