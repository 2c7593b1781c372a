// Comparing two configurations: P(A > B), the mean difference and the runs
// needed, against SciPy and statsmodels (tests/stats/models_reference.py).
#include "trainscope/stats/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/test_util.h"
#include "trainscope/core/error.h"

using nlohmann::json;
using namespace trainscope::stats;
using trainscope::core::Error;
using trainscope::core::ErrorKind;

namespace {

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

struct Case {
  std::vector<double> a, b;
  double delta = 0, sd = 0, sd_a = 0, sd_b = 0;
};

// Two samples of different sizes and spreads; `ties` rounds them so that
// pairs tie.
Case draw(uint64_t seed, bool ties) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  Case c;
  int na = 3 + static_cast<int>(rng() % 30), nb = 2 + static_cast<int>(rng() % 30);
  double sa = 0.002 + 0.001 * (rng() % 5), sb = 0.002 + 0.001 * (rng() % 5);
  for (int i = 0; i < na; ++i) c.a.push_back(0.851 + sa * z(rng));
  for (int i = 0; i < nb; ++i) c.b.push_back(0.850 + sb * z(rng));
  if (ties)
    for (auto* v : {&c.a, &c.b})
      for (double& x : *v) x = std::round(x * 500) / 500;
  c.delta = 0.0005 + 0.0005 * (seed % 7);
  c.sd = sa;
  c.sd_a = sa;
  c.sd_b = sb;
  return c;
}

json reference(const std::vector<Case>& cases, const std::vector<std::vector<int64_t>>& at) {
  json in;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    in["compare"].push_back({{"a", c.a},
                             {"b", c.b},
                             {"delta", c.delta},
                             {"sd", c.sd},
                             {"sd_a", c.sd_a},
                             {"sd_b", c.sd_b},
                             {"alpha", 0.05},
                             {"power", 0.8},
                             {"power_at", at[i]}});
  }
  trainscope::testing::TempDir dir;
  std::ofstream(dir / "in.json") << in.dump();
  std::string cmd = "/usr/bin/python3 " TS_MODELS_REFERENCE " " + (dir / "in.json").string() + " " +
                    (dir / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return json::parse(std::ifstream(dir / "out.json"))["compare"];
}

TEST(CompareTest, AgainstScipyAndStatsmodels) {
  std::vector<Case> cases;
  std::vector<std::vector<int64_t>> at;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    cases.push_back(draw(seed, seed % 3 == 0));
    const Case& c = cases.back();
    int64_t n = runs_needed(c.delta, c.sd, c.sd), m = runs_needed(c.delta, c.sd_a, c.sd_b);
    at.push_back({n - 1 > 1 ? n - 1 : 2, n, m - 1 > 1 ? m - 1 : 2, m});
  }
  json ref = reference(cases, at);
  double worst_p = 0, worst_ci = 0, worst_power = 0, worst_nct = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const Case& c = cases[i];
    const json& r = ref[i];
    PairComparison pc = compare(c.a, c.b);
    worst_p = std::max(worst_p, rel(pc.p_improvement, r["p_improvement"]));
    EXPECT_LT(rel(pc.p_improvement, r["p_improvement"]), 1e-14);
    EXPECT_LT(rel(pc.mean_difference, r["diff"]), 1e-10);
    ASSERT_TRUE(pc.mean_difference_ci);
    // The ends relative to the width: an end near 0 has no relative error.
    double width = r["welch_high"].get<double>() - r["welch_low"].get<double>();
    for (double e :
         {rel(*pc.welch_df, r["welch_df"]),
          std::fabs(pc.mean_difference_ci->low - r["welch_low"].get<double>()) / width,
          std::fabs(pc.mean_difference_ci->high - r["welch_high"].get<double>()) / width}) {
      EXPECT_LT(e, 1e-10);
      worst_ci = std::max(worst_ci, e);
    }
    // Equal SDs: statsmodels' TTestIndPower.
    EXPECT_EQ(runs_needed(c.delta, c.sd, c.sd), r["sm_runs"].get<int64_t>()) << r["sm_nobs"];
    for (size_t k = 0; k < 2; ++k) {
      double e = rel(welch_power(c.delta, c.sd, c.sd, at[i][k]), r["sm_power"][k]);
      EXPECT_LT(e, 1e-8) << at[i][k];
      worst_power = std::max(worst_power, e);
    }
    // Unequal SDs: compare.h's definition through scipy.stats.nct.
    EXPECT_EQ(runs_needed(c.delta, c.sd_a, c.sd_b), r["nct_runs"].get<int64_t>());
    for (size_t k = 2; k < 4; ++k) {
      double e = rel(welch_power(c.delta, c.sd_a, c.sd_b, at[i][k]), r["nct_power"][k]);
      EXPECT_LT(e, 1e-8) << at[i][k];
      worst_nct = std::max(worst_nct, e);
    }
  }
  std::cout << fmt::format(
      "agreement (worst relative difference): P(A>B) {:.2g}, Welch interval (df; ends per width) "
      "{:.2g}, power "
      "vs statsmodels {:.2g}, vs scipy.stats.nct {:.2g}\n",
      worst_p, worst_ci, worst_power, worst_nct);
}

TEST(CompareTest, BootstrapIsSeededAndHoldsTheEstimate) {
  Case c = draw(5, false);
  PairComparison one = compare(c.a, c.b), two = compare(c.a, c.b);
  EXPECT_EQ(one.p_improvement_ci.low, two.p_improvement_ci.low);
  EXPECT_EQ(one.p_improvement_ci.high, two.p_improvement_ci.high);
  EXPECT_EQ(one.mean_difference_bootstrap_ci.low, two.mean_difference_bootstrap_ci.low);
  CompareOptions o;
  o.seed = 1;
  PairComparison other = compare(c.a, c.b, o);
  EXPECT_NE(one.mean_difference_bootstrap_ci.low, other.mean_difference_bootstrap_ci.low);
  for (const auto& pc : {one, other}) {
    EXPECT_LE(pc.p_improvement_ci.low, pc.p_improvement);
    EXPECT_GE(pc.p_improvement_ci.high, pc.p_improvement);
    EXPECT_LE(pc.mean_difference_bootstrap_ci.low, pc.mean_difference);
    EXPECT_GE(pc.mean_difference_bootstrap_ci.high, pc.mean_difference);
  }
  // The bootstrap interval of the mean difference is close to Welch's
  // (within its own resampling noise and the small-sample t factor).
  double welch = one.mean_difference_ci->high - one.mean_difference_ci->low;
  double boot = one.mean_difference_bootstrap_ci.high - one.mean_difference_bootstrap_ci.low;
  EXPECT_NEAR(boot / welch, 1, 0.35);
}

// The bootstrap interval of P(A > B) covers the truth about as often as it
// says: A ~ N(0.5, 1), B ~ N(0, 1), P(A > B) = Phi(0.5 / sqrt 2).
TEST(CompareTest, ProbabilityIntervalCoversTheTruth) {
  const double truth = 0.5 * std::erfc(-0.5 / std::sqrt(2.0) / std::sqrt(2.0));
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z;
  CompareOptions o;
  o.resamples = 1000;
  int covered = 0, trials = 300;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a(40), b(40);
    for (double& v : a) v = 0.5 + z(rng);
    for (double& v : b) v = z(rng);
    PairComparison pc = compare(a, b, o);
    covered += pc.p_improvement_ci.low <= truth && truth <= pc.p_improvement_ci.high;
  }
  // 95% nominal; the binomial SD of the rate over 300 trials is 1.3%, and a
  // percentile bootstrap of n = 40 undercovers by a point or two.
  EXPECT_NEAR(covered / static_cast<double>(trials), 0.95, 0.05);
}

TEST(CompareTest, SeparatedAndTiedSamples) {
  std::vector<double> a = {2, 3, 4}, b = {0, 1, 1.5};
  PairComparison pc = compare(a, b);
  EXPECT_EQ(pc.p_improvement, 1);
  EXPECT_EQ(pc.p_improvement_ci.low, 1);
  EXPECT_EQ(probability_of_improvement(b, a), 0);
  std::vector<double> same = {1, 2, 3};
  EXPECT_EQ(probability_of_improvement(same, same), 0.5);
  // Both constant but different: P = 1, no Welch interval, no plan.
  std::vector<double> x = {1, 1}, y = {0, 0};
  PairComparison c = compare(x, y);
  EXPECT_EQ(c.p_improvement, 1);
  EXPECT_FALSE(c.mean_difference_ci);
  EXPECT_FALSE(c.runs_needed);
  EXPECT_EQ(c.notes.size(), 2u);
  // The observed difference is the default delta; a given one wins.
  CompareOptions o;
  o.delta = -0.5;
  PairComparison d = compare(a, b, o);
  EXPECT_EQ(d.delta, 0.5);
  EXPECT_EQ(*d.runs_needed, runs_needed(0.5, *d.a.sd, *d.b.sd));
  EXPECT_EQ(pc.delta, pc.mean_difference);
}

void expect_usage(const std::function<void()>& f, const std::string& says) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted: " << says;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(CompareTest, RefusesWhatTheSamplesCannotAnswer) {
  std::vector<double> one = {1}, two = {1, 2}, nan = {1, NAN}, c1 = {3, 3}, c2 = {3, 3, 3};
  expect_usage([&] { compare(one, two); }, "A has 1 value(s)");
  expect_usage([&] { compare(two, one); }, "B has 1 value(s)");
  expect_usage([&] { compare(two, nan); }, "B holds nan");
  expect_usage([&] { compare(c1, c2); }, "every run of A and B gave 3");
  CompareOptions o;
  o.resamples = 10;
  expect_usage([&] { compare(two, c1, o); }, "resamples is 10");
  expect_usage([&] { runs_needed(0, 1, 1); }, "delta is 0");
  expect_usage([&] { runs_needed(1, 0, 0); }, "some noise");
  expect_usage([&] { runs_needed(1, 1, 1, 0.05, 1); }, "power is 1");
  expect_usage([&] { runs_needed(1e-9, 1, 1); }, "more than 1000000000 runs");
  expect_usage([&] { welch_power(1, 1, 1, 1); }, "1 run(s) per side");
}

}  // namespace
