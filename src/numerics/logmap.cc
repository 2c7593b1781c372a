#define MPFR_WANT_FLOAT128 1
#include "trainscope/numerics/logmap.h"

#if defined(__clang__)
// mpfr.h names the type _Float128, which clang's C++ only spells __float128
// (the sanitizer and fuzzer build uses clang).
typedef __float128 _Float128;
#endif
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "logmap_kernels.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::numerics {
using core::ErrorKind;
using core::fail;

namespace {

// Digits a binary128 comparison can resolve; an exact match counts as this.
constexpr double kMaxDigits = 34.0;

// RAII mpfr_t.
class Mp {
 public:
  explicit Mp(mpfr_prec_t prec) { mpfr_init2(v_, prec); }
  ~Mp() { mpfr_clear(v_); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
  mpfr_ptr get() { return v_; }
  operator mpfr_ptr() { return v_; }

 private:
  mpfr_t v_;
};

// Emulates one IEEE binary format: precision plus exponent range with
// subnormals. MPFR's exponent range is per thread; this restores it.
class IeeeFormat {
 public:
  IeeeFormat(mpfr_prec_t prec, mpfr_exp_t emin, mpfr_exp_t emax)
      : prec_(prec),
        old_emin_(mpfr_get_emin()),
        old_emax_(mpfr_get_emax()),
        emin_(emin),
        emax_(emax) {}
  ~IeeeFormat() {
    mpfr_set_emin(old_emin_);
    mpfr_set_emax(old_emax_);
  }
  void enter() const {
    mpfr_set_emin(emin_);
    mpfr_set_emax(emax_);
  }
  mpfr_prec_t prec() const { return prec_; }
  // Rounds `v` (any precision, exact input) to this format.
  void round(mpfr_ptr out, mpfr_srcptr v) const {
    enter();
    int t = mpfr_set(out, v, MPFR_RNDN);
    t = mpfr_check_range(out, t, MPFR_RNDN);
    mpfr_subnormalize(out, t, MPFR_RNDN);
  }
  void fix(mpfr_ptr out, int t) const {
    t = mpfr_check_range(out, t, MPFR_RNDN);
    mpfr_subnormalize(out, t, MPFR_RNDN);
  }
  static IeeeFormat binary32() { return {24, -148, 128}; }
  static IeeeFormat binary64() { return {53, -1073, 1024}; }

 private:
  mpfr_prec_t prec_;
  mpfr_exp_t old_emin_, old_emax_, emin_, emax_;
};

// One step of `order` in format `f`, every operation rounded to f.
void mp_step(mpfr_ptr x, mpfr_srcptr r, Order order, bool fma, const IeeeFormat& f) {
  f.enter();
  Mp a(f.prec()), b(f.prec());
  switch (order) {
    case Order::kRxTimesOneMinusX:
      f.fix(a, mpfr_mul(a, r, x, MPFR_RNDN));
      f.fix(b, mpfr_ui_sub(b, 1, x, MPFR_RNDN));
      f.fix(x, mpfr_mul(x, a, b, MPFR_RNDN));
      break;
    case Order::kRTimesXOneMinusX:
      if (fma) {
        Mp negx(f.prec());
        mpfr_neg(negx, x, MPFR_RNDN);
        f.fix(a, mpfr_fma(a, negx, x, x, MPFR_RNDN));
      } else {
        f.fix(b, mpfr_ui_sub(b, 1, x, MPFR_RNDN));
        f.fix(a, mpfr_mul(a, x, b, MPFR_RNDN));
      }
      f.fix(x, mpfr_mul(x, r, a, MPFR_RNDN));
      break;
    case Order::kRxMinusRxx:
      f.fix(a, mpfr_mul(a, r, x, MPFR_RNDN));  // t
      if (fma) {
        Mp negt(f.prec());
        mpfr_neg(negt, a, MPFR_RNDN);
        f.fix(x, mpfr_fma(x, negt, x, a, MPFR_RNDN));
      } else {
        f.fix(b, mpfr_mul(b, a, x, MPFR_RNDN));
        f.fix(x, mpfr_sub(x, a, b, MPFR_RNDN));
      }
      break;
  }
}

const char* order_id(Order o) {
  switch (o) {
    case Order::kRxTimesOneMinusX:
      return "rx_1mx";
    case Order::kRTimesXOneMinusX:
      return "r_x1mx";
    case Order::kRxMinusRxx:
      return "rx_rxx";
  }
  return "?";
}
const char* order_text(Order o) {
  switch (o) {
    case Order::kRxTimesOneMinusX:
      return "(r*x)*(1-x)";
    case Order::kRTimesXOneMinusX:
      return "r*(x*(1-x))";
    case Order::kRxMinusRxx:
      return "r*x - r*x*x";
  }
  return "?";
}

// A decimal as the reference reads it (mpfr_strtofr, base 10) and the
// variants too (strtof, strtod): [+-]digits[.digits][e[+-]digits]. A hex
// float, inf or nan reads differently in each (MPFR's base 10 stops at
// "0x"), so it is refused.
void check_decimal(const std::string& s, const char* what) {
  size_t i = s.starts_with('+') || s.starts_with('-') ? 1 : 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') ++i, mantissa += digits();
  bool ok = mantissa > 0;
  if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    ok = digits() > 0;
  }
  if (!ok || i != s.size())
    fail(ErrorKind::kUsage, "--{} '{}' is not a decimal number (such as 0.25 or 3.7e0)", what, s);
}

// The sign of (exact decimal s) - bound: the decimal as written, not as a
// double rounds it (1.0000000000000000001 is above 1).
int compare_exact(const std::string& s, long bound) {
  mpfr_t v;
  mpfr_init2(v, 64);
  const int rounded = mpfr_strtofr(v, s.c_str(), nullptr, 10, MPFR_RNDN);
  int cmp = mpfr_cmp_si(v, bound);
  mpfr_clear(v);
  if (cmp != 0) return cmp;
  return rounded > 0 ? -1 : rounded < 0 ? 1 : 0;  // v rounded up: s is below it
}

}  // namespace

std::vector<Variant> available_variants() {
  std::vector<Variant> out;
  const Order orders[] = {Order::kRxTimesOneMinusX, Order::kRTimesXOneMinusX, Order::kRxMinusRxx};
  for (auto [fmt_id, fmt_name, format] : {std::tuple{"f32", "float32", Format::kFloat32},
                                          std::tuple{"f64", "float64", Format::kFloat64}}) {
    for (Order o : orders) {
      out.push_back({fmt::format("{} {}", fmt_name, order_text(o)),
                     fmt::format("{}.{}", fmt_id, order_id(o)), format, o});
      if (o != Order::kRxTimesOneMinusX)
        out.push_back({fmt::format("{} {} with FMA", fmt_name, order_text(o)),
                       fmt::format("{}.{}.fma", fmt_id, order_id(o)), format, o, true});
    }
  }
  out.push_back({"float32 storage, double intermediates (r*x)*(1-x)", "f32s_f64c.rx_1mx",
                 Format::kFloat32, Order::kRxTimesOneMinusX, false, true});
  out.push_back({"long double (x87 80-bit) (r*x)*(1-x)", "f80.rx_1mx", Format::kLongDouble,
                 Order::kRxTimesOneMinusX});
  out.push_back(
      {"binary128 (r*x)*(1-x)", "f128.rx_1mx", Format::kBinary128, Order::kRxTimesOneMinusX});
  return out;
}

int reference_precision(double r, int64_t steps) {
  double per_step = std::max(1.0, std::log2(std::max(r, 1.0)));
  return static_cast<int>(std::ceil(static_cast<double>(steps) * per_step)) + 128;
}

void validate(const LogmapOptions& o) {
  check_decimal(o.r, "r");
  check_decimal(o.x0, "x0");
  if (compare_exact(o.r, 0) <= 0 || compare_exact(o.r, 4) > 0)
    fail(ErrorKind::kUsage,
         "--r {} is outside (0, 4]: for r > 4 the map sends x out of [0, 1] and the orbit "
         "diverges to -infinity; for r <= 0 it is not the logistic map",
         o.r);
  if (compare_exact(o.x0, 0) < 0 || compare_exact(o.x0, 1) > 0)
    fail(ErrorKind::kUsage,
         "--x0 {} is outside [0, 1]: from there x(1) < 0 and the map runs off to -infinity", o.x0);
  if (o.steps <= 0) fail(ErrorKind::kUsage, "--steps must be positive (got {})", o.steps);
  if (o.steps > kMaxSteps)
    fail(ErrorKind::kUsage,
         "--steps {} is too large: the exact reference needs ~steps*log2(r) bits, so steps are "
         "capped at {}",
         o.steps, kMaxSteps);
  auto all = available_variants();
  all.insert(all.end(), o.extra_variants.begin(), o.extra_variants.end());
  for (const auto& id : o.variants) {
    if (std::none_of(all.begin(), all.end(), [&](const Variant& v) { return v.id == id; })) {
      std::string list;
      for (const auto& v : all) list += (list.empty() ? "" : ", ") + v.id;
      fail(ErrorKind::kUsage, "unknown variant '{}'; valid: {}", id, list);
    }
  }
  // inf was taken (no step can pass it) and a threshold given twice was
  // two columns and two points of one metric (twenty-eighth hunt, A-D2/D3).
  for (size_t i = 0; i < o.thresholds.size(); ++i) {
    const double t = o.thresholds[i];
    if (!(t > 0) || !std::isfinite(t))
      fail(ErrorKind::kUsage, "thresholds must be finite and > 0 (got {})", core::format_double(t));
    if (std::find(o.thresholds.begin(), o.thresholds.begin() + static_cast<std::ptrdiff_t>(i), t) !=
        o.thresholds.begin() + static_cast<std::ptrdiff_t>(i))
      fail(ErrorKind::kUsage, "threshold {} is given twice: give each once",
           core::format_double(t));
  }
}

std::vector<double> reference_trajectory(const std::string& x0, const std::string& r, int64_t steps,
                                         int precision);

namespace {
kernels::Trajectory iterate_q(const Variant& v, const std::string& x0s, const std::string& rs,
                              int64_t steps) {
  switch (v.format) {
    case Format::kFloat32: {
      float x0 = std::strtof(x0s.c_str(), nullptr), r = std::strtof(rs.c_str(), nullptr);
      return v.wide_intermediates ? kernels::iterate_f32_wide(x0, r, v.order, v.fma, steps)
                                  : kernels::iterate_f32(x0, r, v.order, v.fma, steps);
    }
    case Format::kFloat64:
      return kernels::iterate_f64(std::strtod(x0s.c_str(), nullptr),
                                  std::strtod(rs.c_str(), nullptr), v.order, v.fma, steps);
    case Format::kLongDouble:
      return kernels::iterate_f80(std::strtold(x0s.c_str(), nullptr),
                                  std::strtold(rs.c_str(), nullptr), v.order, steps);
    case Format::kBinary128: {
      Mp t(113);
      mpfr_set_str(t, x0s.c_str(), 10, MPFR_RNDN);
      __float128 x0 = mpfr_get_float128(t, MPFR_RNDN);
      mpfr_set_str(t, rs.c_str(), 10, MPFR_RNDN);
      __float128 r = mpfr_get_float128(t, MPFR_RNDN);
      return kernels::iterate_f128(x0, r, v.order, steps);
    }
  }
  return {};
}

std::vector<double> to_double(const kernels::Trajectory& q) {
  std::vector<double> out(q.size());
  for (size_t i = 0; i < q.size(); ++i) out[i] = static_cast<double>(q[i]);
  return out;
}

kernels::Trajectory reference_q(const std::string& x0, const std::string& r, int64_t steps,
                                int precision) {
  Mp x(precision), rr(precision), a(precision), b(precision);
  mpfr_set_str(x, x0.c_str(), 10, MPFR_RNDN);
  mpfr_set_str(rr, r.c_str(), 10, MPFR_RNDN);
  kernels::Trajectory out;
  out.reserve(static_cast<size_t>(steps) + 1);
  out.push_back(mpfr_get_float128(x, MPFR_RNDN));
  for (int64_t n = 0; n < steps; ++n) {
    mpfr_mul(a, rr, x, MPFR_RNDN);
    mpfr_ui_sub(b, 1, x, MPFR_RNDN);
    mpfr_mul(x, a, b, MPFR_RNDN);
    out.push_back(mpfr_get_float128(x, MPFR_RNDN));
  }
  return out;
}
}  // namespace

std::vector<double> iterate(const Variant& v, const std::string& x0s, const std::string& rs,
                            int64_t steps) {
  return to_double(iterate_q(v, x0s, rs, steps));
}

std::vector<double> reference_trajectory(const std::string& x0, const std::string& r, int64_t steps,
                                         int precision) {
  return to_double(reference_q(x0, r, steps, precision));
}

std::vector<double> emulate(const Variant& v, const std::string& x0s, const std::string& rs,
                            int64_t steps) {
  if (v.torch || (v.format != Format::kFloat32 && v.format != Format::kFloat64))
    fail(ErrorKind::kUsage, "emulation covers float32 and float64 variants only ('{}')", v.id);
  const IeeeFormat storage =
      v.format == Format::kFloat32 ? IeeeFormat::binary32() : IeeeFormat::binary64();
  const IeeeFormat compute = v.wide_intermediates ? IeeeFormat::binary64() : storage;
  // Start from the values the hardware starts from (decimal rounded once).
  Mp exact(256), x(compute.prec()), r(compute.prec()), stored(storage.prec());
  mpfr_set_str(exact, x0s.c_str(), 10, MPFR_RNDN);
  storage.round(stored, exact);
  mpfr_set(x, stored, MPFR_RNDN);
  mpfr_set_str(exact, rs.c_str(), 10, MPFR_RNDN);
  storage.round(stored, exact);
  mpfr_set(r, stored, MPFR_RNDN);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(steps) + 1);
  out.push_back(mpfr_get_d(x, MPFR_RNDN));
  for (int64_t n = 0; n < steps; ++n) {
    mp_step(x, r, v.order, v.fma, compute);
    if (v.wide_intermediates) {
      storage.round(stored, x);
      compute.enter();
      mpfr_set(x, stored, MPFR_RNDN);
    }
    out.push_back(mpfr_get_d(x, MPFR_RNDN));
  }
  return out;
}

int64_t first_divergence(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol)) return static_cast<int64_t>(i);
  return -1;
}

namespace {

// Correct significant digits per step. Errors in binary128 against the
// reference rounded to binary128, so that long double and binary128
// variants are measured beyond double.
void measure_digits(const kernels::Trajectory& q, const kernels::Trajectory& ref_q,
                    VariantResult& vr) {
  vr.correct_digits.reserve(q.size());
  for (size_t n = 0; n < q.size(); ++n) {
    __float128 ref = ref_q[n];
    __float128 errq = q[n] - ref;
    if (errq < 0) errq = -errq;
    double err = static_cast<double>(errq);
    double rel = ref != 0 ? static_cast<double>(errq / (ref < 0 ? -ref : ref)) : err;
    double digits = rel == 0 ? kMaxDigits : std::clamp(-std::log10(rel), 0.0, kMaxDigits);
    if (std::isnan(digits)) digits = 0;
    vr.correct_digits.push_back(digits);
    if (vr.digits_gone < 0 && digits < 1) vr.digits_gone = static_cast<int64_t>(n);
  }
}

// The linear regime: the error is well above the format's rounding (3
// digits below its initial digits) and still small (>= 3 correct digits).
// There e(n2)/e(n1) = prod |f'(x_k)|, so the measured slope and the
// finite-time Lyapunov exponent over the same steps must agree.
void measure_growth(const kernels::Trajectory& q, const kernels::Trajectory& ref_q,
                    const LogmapResult& res, double r, VariantResult& vr) {
  const double initial = vr.correct_digits.front();
  const bool f32 = vr.variant.format == Format::kFloat32;
  const double hi = initial - (f32 ? 2.0 : 3.0);
  const double lo = f32 ? 1.5 : 3.0;
  int64_t n1 = -1, n2 = -1;
  for (size_t n = 0; n < vr.correct_digits.size(); ++n) {
    double d = vr.correct_digits[n];
    if (n1 < 0 && d <= hi) n1 = static_cast<int64_t>(n);
    if (n1 >= 0 && d < lo) break;
    if (n1 >= 0) n2 = static_cast<int64_t>(n);
  }
  if (n1 < 0 || n2 - n1 < 5) return;
  vr.window_from = n1;
  vr.window_to = n2;
  // Growth of the absolute error (the Lyapunov exponent describes |dx|,
  // while correct digits are relative to x, which moves).
  auto abs_err = [&](int64_t n) {
    __float128 e = q[static_cast<size_t>(n)] - ref_q[static_cast<size_t>(n)];
    return std::fabs(static_cast<double>(e));
  };
  vr.digits_lost_per_step =
      (std::log10(abs_err(n2)) - std::log10(abs_err(n1))) / static_cast<double>(n2 - n1);
  double ls = 0;
  for (int64_t k = n1; k < n2; ++k)
    ls += std::log(std::fabs(r * (1 - 2 * res.reference[static_cast<size_t>(k)])));
  vr.predicted_per_step = ls / static_cast<double>(n2 - n1) / std::log(10.0);
}

VariantResult run_variant(const Variant& v, const LogmapOptions& options,
                          const kernels::Trajectory& ref_q, const LogmapResult& res, double r) {
  VariantResult vr;
  vr.variant = v;
  kernels::Trajectory q;
  if (v.torch) {
    vr.x = options.extra_iterate(v, options.x0, options.r, options.steps);
    q.assign(vr.x.begin(), vr.x.end());
  } else {
    q = iterate_q(v, options.x0, options.r, options.steps);
    vr.x = to_double(q);
  }
  for (double t : options.thresholds)
    vr.first_over.push_back(first_divergence(vr.x, res.reference, t));
  measure_digits(q, ref_q, vr);
  measure_growth(q, ref_q, res, r, vr);
  return vr;
}

}  // namespace

LogmapResult run_logmap(const LogmapOptions& options) {
  validate(options);
  LogmapResult res;
  res.options = options;
  const double r = std::strtod(options.r.c_str(), nullptr);
  res.reference_precision = reference_precision(r, options.steps);
  const kernels::Trajectory ref_q =
      reference_q(options.x0, options.r, options.steps, res.reference_precision);
  res.reference = to_double(ref_q);
  double lsum = 0;
  int64_t lcount = 0;
  for (size_t n = 0; n + 1 < res.reference.size(); ++n) {
    double d = std::fabs(r * (1 - 2 * res.reference[n]));
    if (d > 0) lsum += std::log(d), ++lcount;
  }
  res.lyapunov = lcount ? lsum / static_cast<double>(lcount) : 0;
  res.predicted_digits_per_step = res.lyapunov / std::log(10.0);
  std::vector<Variant> variants = available_variants();
  variants.insert(variants.end(), options.extra_variants.begin(), options.extra_variants.end());
  for (const auto& v : variants) {
    const auto& only = options.variants;
    if (!only.empty() && std::find(only.begin(), only.end(), v.id) == only.end()) continue;
    res.variants.push_back(run_variant(v, options, ref_q, res, r));
  }
  return res;
}

}  // namespace trainscope::numerics
