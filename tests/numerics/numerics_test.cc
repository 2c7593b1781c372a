// The floating-point lab against MPFR: bit-exact emulation of every float32
// and float64 variant, the Lyapunov exponent, and summation order.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/numerics/logmap.h"

namespace trainscope::numerics {
using core::Error;

namespace {

std::string error_of(const LogmapOptions& o) {
  try {
    validate(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Several (x0, r, N) drawn here rather than copied from anywhere.
std::vector<std::tuple<std::string, std::string, int64_t>> cases() {
  std::mt19937_64 gen(20261122);
  std::uniform_real_distribution<double> x0(0.01, 0.99), r(2.8, 4.0);
  std::vector<std::tuple<std::string, std::string, int64_t>> out = {{"0.4", "3.7", 2000},
                                                                    {"0.4", "4", 500}};
  for (int i = 0; i < 4; ++i)
    out.emplace_back(fmt::format("{:.6f}", x0(gen)), fmt::format("{:.5f}", r(gen)), 400 + 100 * i);
  return out;
}

TEST(LogmapTest, EveryFloat32AndFloat64VariantEqualsMpfrAtItsPrecisionBitForBit) {
  int compared = 0;
  for (const auto& v : available_variants()) {
    if (v.format != Format::kFloat32 && v.format != Format::kFloat64) continue;
    for (const auto& [x0, r, n] : cases()) {
      auto hw = iterate(v, x0, r, n);
      auto mp = emulate(v, x0, r, n);
      ASSERT_EQ(hw.size(), mp.size());
      for (size_t i = 0; i < hw.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint64_t>(hw[i]), std::bit_cast<uint64_t>(mp[i]))
            << v.id << " x0=" << x0 << " r=" << r << " differs at step " << i << ": " << hw[i]
            << " vs " << mp[i];
      ++compared;
    }
  }
  EXPECT_GE(compared, 11 * 6);
}

TEST(LogmapTest, VariantsReallyDiffer) {
  // Order, FMA and width each change the float32 trajectory somewhere.
  std::set<std::vector<double>> distinct;
  for (const auto& v : available_variants())
    if (v.format == Format::kFloat32) distinct.insert(iterate(v, "0.4", "3.7", 200));
  EXPECT_GE(distinct.size(), 4u);
}

TEST(LogmapTest, ReferencePrecisionIsEnoughForTheWholeTrajectory) {
  int p = reference_precision(4.0, 2000);
  EXPECT_GE(p, 2000 * 2);
  auto a = reference_trajectory("0.4", "4", 2000, p);
  auto b = reference_trajectory("0.4", "4", 2000, p + 512);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "step " << i;
  // Too few bits do not survive 2000 steps.
  auto c = reference_trajectory("0.4", "4", 2000, 1000);
  EXPECT_NE(c.back(), a.back());
}

TEST(LogmapTest, DigitLossMatchesTheLyapunovExponentWithinTenPercent) {
  for (const char* r : {"3.7", "4"}) {
    LogmapOptions o;
    o.r = r;
    auto res = run_logmap(o);
    if (std::string(r) == "4") {
      EXPECT_NEAR(res.lyapunov, std::log(2.0), 0.02);
    }
    int checked = 0;
    for (const auto& v : res.variants) {
      if (v.window_from < 0) continue;
      EXPECT_NEAR(v.digits_lost_per_step, v.predicted_per_step, 0.1 * v.predicted_per_step)
          << v.variant.id << " r=" << r;
      ++checked;
    }
    EXPECT_GE(checked, 10) << r;
    // Every variant departs from the reference, float32 before float64.
    const VariantResult* f32 = nullptr;
    const VariantResult* f64 = nullptr;
    for (const auto& v : res.variants) {
      if (v.variant.id == "f32.rx_1mx") f32 = &v;
      if (v.variant.id == "f64.rx_1mx") f64 = &v;
    }
    ASSERT_TRUE(f32 && f64);
    EXPECT_GT(f32->first_over[0], 0);
    EXPECT_LT(f32->first_over[0], f64->first_over[0]);
    EXPECT_LT(f32->digits_gone, f64->digits_gone);
  }
}

TEST(LogmapTest, BadInputIsExplained) {
  LogmapOptions o;
  o.r = "4.5";
  EXPECT_NE(error_of(o).find("outside (0, 4]"), std::string::npos);
  o = {};
  o.x0 = "1.2";
  EXPECT_NE(error_of(o).find("outside [0, 1]"), std::string::npos);
  o = {};
  o.steps = 0;
  EXPECT_NE(error_of(o).find("positive"), std::string::npos);
  o = {};
  o.steps = 10'000'000;
  EXPECT_NE(error_of(o).find("capped"), std::string::npos);
  o = {};
  o.variants = {"f16.nope"};
  auto msg = error_of(o);
  EXPECT_NE(msg.find("unknown variant 'f16.nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64.rx_rxx.fma"), std::string::npos) << msg;
  o = {};
  o.r = "abc";
  EXPECT_NE(error_of(o).find("not a decimal number"), std::string::npos);
  // Twenty-eighth hunt, A-D2, A-D3: inf, which no step passes, was taken;
  // a threshold given twice was one metric recorded twice.
  o = {};
  o.thresholds = {0.1, INFINITY};
  EXPECT_NE(error_of(o).find("thresholds must be finite and > 0 (got inf)"), std::string::npos);
  o.thresholds = {0.1, 0.01, 0.1};
  EXPECT_NE(error_of(o).find("threshold 0.1 is given twice"), std::string::npos);
}

// Eighteenth hunt, A-D5 and A-D6: the range is the exact decimal's (the
// reference's), and a hex float, read as 0 by MPFR's base 10 but as 0.25 by
// strtod, is no decimal.
TEST(LogmapTest, TheRangeIsTheExactDecimalsAndOnlyDecimalsAreTaken) {
  auto refusal = [](const std::string& r, const std::string& x0) {
    LogmapOptions o;
    o.r = r;
    o.x0 = x0;
    o.steps = 5;
    return error_of(o);
  };
  EXPECT_EQ(refusal("3.7", "1.0000000000000000001"),
            "--x0 1.0000000000000000001 is outside [0, 1]: from there x(1) < 0 and the map runs "
            "off to -infinity");
  EXPECT_NE(refusal("4.0000000000000000001", "0.25").find("--r 4.0000000000000000001 is outside"),
            std::string::npos);
  EXPECT_NE(refusal("3.7", "-1e-30").find("is outside [0, 1]"), std::string::npos);
  EXPECT_EQ(refusal("1e-400000", "0.25"), "");  // above 0, however far below a double
  for (const std::string bad : {"0x1p-2", "inf", "nan", ".", "1e", "1.5.", "+", " 0.5", "0.5 "})
    EXPECT_EQ(refusal("3.7", bad),
              "--x0 '" + bad + "' is not a decimal number (such as 0.25 or 3.7e0)")
        << bad;
  for (const std::string good : {"0", "1", "-0", "1.000", ".5", "0.", "25e-2", "+0.25"})
    EXPECT_EQ(refusal("4", good), "") << good;
}

TEST(SumTest, BlockingChangesTheFloat32ResultAndKahanIsClosest) {
  SumReport rep = run_sum(1'000'000, 7);
  std::set<float> blocked;
  const SumResult* kahan = nullptr;
  for (const auto& r : rep.results) {
    if (r.method.rfind("blocked-", 0) == 0) blocked.insert(r.value);
    if (r.method == "kahan") kahan = &r;
  }
  EXPECT_GE(blocked.size(), 2u) << "thread count should change a float32 reduction";
  ASSERT_TRUE(kahan);
  for (const auto& r : rep.results)
    if (r.method != "kahan" && r.method != "exact rounded to float32") {
      EXPECT_LE(kahan->abs_error, r.abs_error) << r.method;
    }
  EXPECT_LE(kahan->ulp_error, 1.0);
}

}  // namespace
}  // namespace trainscope::numerics
