// The statistics against SciPy (Debian python3-scipy), on random samples
// drawn here and handed to tests/stats/scipy_reference.py.
#include "trainscope/stats/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "trainscope/core/error.h"
#include "trainscope/stats/runs.h"
#include "trainscope/stats/variance.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace trainscope::stats;

namespace {

constexpr double kRel = 1e-10;

void expect_close(double ours, double scipy, const std::string& what, double rel = kRel) {
  double tol = rel * std::max(std::fabs(scipy), 1e-300);
  EXPECT_NEAR(ours, scipy, tol) << what;
}

struct Case {
  std::vector<std::vector<double>> groups;
  double mu = 0;
};

// Groups of different sizes, means and spreads; `ties` rounds the values so
// that the rank tests see ties.
Case draw(uint64_t seed, bool ties) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  Case c;
  int k = 3 + seed % 3;
  for (int g = 0; g < k; ++g) {
    int n = 5 + static_cast<int>(rng() % 40);
    double m = 0.85 + 0.01 * g, s = 0.002 + 0.001 * (rng() % 5);
    auto& v = c.groups.emplace_back();
    for (int i = 0; i < n; ++i) {
      double x = m + s * z(rng);
      v.push_back(ties ? std::round(x * 500) / 500 : x);
    }
  }
  c.mu = 0.86;
  return c;
}

json scipy_says(const std::vector<Case>& cases) {
  fs::path dir = fs::temp_directory_path() / ("ts_stats_" + std::to_string(getpid()));
  fs::create_directories(dir);
  json in = json::array();
  for (const auto& c : cases) in.push_back({{"groups", c.groups}, {"mu", c.mu}});
  std::ofstream(dir / "in.json") << in.dump();
  std::string cmd = "/usr/bin/python3 " TS_STATS_REFERENCE " " + (dir / "in.json").string() + " " +
                    (dir / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json out = json::parse(std::ifstream(dir / "out.json"));
  fs::remove_all(dir);
  return out;
}

void check_test(const TestResult& r, const json& ref, const std::string& what, double rel = kRel) {
  expect_close(r.statistic, ref["statistic"], what + " statistic", rel);
  expect_close(r.p_value, ref["p"], what + " p", rel);
}

void check_case(const Case& c, const json& ref) {
  const auto& a = c.groups[0];
  Summary s = summarize(a);
  const json& rs = ref["summary"];
  expect_close(s.mean, rs["mean"], "mean");
  expect_close(variance(a, 0), rs["var0"], "variance ddof 0");
  expect_close(*s.variance, rs["var1"], "variance ddof 1");
  expect_close(*s.sd, rs["sd1"], "sd");
  expect_close(*s.sem, rs["sem"], "sem");
  expect_close(*s.ci_low, rs["ci_low"], "ci low");
  expect_close(*s.ci_high, rs["ci_high"], "ci high");
  expect_close(*s.cv, rs["cv"], "cv");
  check_test(t_test_one_sample(a, c.mu), ref["ttest_1samp"], "ttest_1samp");
  TestResult w = welch_t_test(a, c.groups[1]);
  check_test(w, ref["welch"], "welch");
  check_test(anova_oneway(c.groups), ref["f_oneway"], "f_oneway");
  check_test(kruskal_wallis(c.groups), ref["kruskal"], "kruskal");
  check_test(levene(c.groups, "median"), ref["levene_median"], "levene median");
  check_test(levene(c.groups, "mean"), ref["levene_mean"], "levene mean");
  expect_close(cohens_d(a, c.groups[1]), ref["cohens_d"], "cohens d");
  std::vector<double> ranks = rank_average(a);
  for (size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(ranks[i], ref["ranks"][i].get<double>());
  std::vector<double> p = ref["pvalues"];
  std::vector<double> bonf = bonferroni(p), hl = holm(p);
  for (size_t i = 0; i < p.size(); ++i) {
    expect_close(bonf[i], ref["bonferroni"][i], "bonferroni");
    expect_close(hl[i], ref["holm"][i], "holm");
  }
}

}  // namespace

TEST(StatsTest, AgreesWithScipyOnRandomSamples) {
  std::vector<Case> cases;
  for (uint64_t seed = 1; seed <= 12; ++seed) cases.push_back(draw(seed, seed % 2 == 0));
  json ref = scipy_says(cases);
  ASSERT_EQ(ref.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check_case(cases[i], ref[i]);
  }
}

// SciPy 1.10's Shapiro-Wilk is the Fortran AS R94 in single precision (its W
// and p are float32): our single-precision version must give the same bits,
// and our double-precision one agrees to float32's precision.
TEST(StatsTest, ShapiroWilkAsScipyAgreesWithScipyTo1e10) {
  std::vector<Case> cases;
  for (uint64_t seed = 20; seed < 60; ++seed) cases.push_back(draw(seed, false));
  for (int n : {3, 4, 5, 6, 11, 12, 50, 400}) {  // each branch of the algorithm
    Case c = draw(100 + n, false);
    std::mt19937_64 rng(n);
    std::gamma_distribution<double> skewed(2.0);  // W well below 1 as well as near it
    c.groups[0].resize(std::min(c.groups[0].size(), size_t(n)));
    while (c.groups[0].size() < size_t(n)) c.groups[0].push_back(skewed(rng));
    cases.push_back(c);
  }
  json ref = scipy_says(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    TestResult r = shapiro_wilk_as_scipy(cases[i].groups[0]);
    double w = ref[i]["shapiro"]["statistic"].get<double>(),
           p = ref[i]["shapiro"]["p"].get<double>();
    EXPECT_NEAR(r.statistic, w, 1e-10 * w) << i;
    EXPECT_NEAR(r.p_value, p, 1e-10 * p) << i << " n=" << cases[i].groups[0].size();
  }
}

TEST(StatsTest, ShapiroWilkAgreesWithScipyToItsSinglePrecision) {
  std::vector<Case> cases;
  for (uint64_t seed = 20; seed < 40; ++seed) cases.push_back(draw(seed, false));
  json ref = scipy_says(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    TestResult r = shapiro_wilk(cases[i].groups[0]);
    EXPECT_NEAR(r.statistic, ref[i]["shapiro"]["statistic"].get<double>(), 2e-6) << i;
    EXPECT_NEAR(r.p_value, ref[i]["shapiro"]["p"].get<double>(),
                2e-4 * std::max(ref[i]["shapiro"]["p"].get<double>(), 1e-3))
        << i;
  }
}

TEST(StatsTest, BootstrapIntervalOfTheSdIsSeededAndHoldsTheSd) {
  Case c = draw(7, false);
  const auto& x = c.groups[0];
  Interval a = bootstrap_sd_ci(x, 1, 10000, 42), b = bootstrap_sd_ci(x, 1, 10000, 42);
  Interval other = bootstrap_sd_ci(x, 1, 10000, 43);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_NE(a.low, other.low);
  EXPECT_LT(a.low, sd(x));
  EXPECT_GT(a.high, sd(x));
}

// The percentile bootstrap of the SD covers the true SD about as often as it
// claims (it is known to under-cover a little at small n).
TEST(StatsTest, BootstrapIntervalCoversTheTrueSd) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 2.0);
  int covered = 0, trials = 200;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(40);
    for (double& v : x) v = z(rng);
    Interval ci = bootstrap_sd_ci(x, 1, 2000, t);
    covered += ci.low <= 2.0 && 2.0 <= ci.high;
  }
  EXPECT_GT(covered, trials * 0.85);
  EXPECT_LT(covered, trials * 0.99);
}

TEST(StatsTest, VarianceComponentsAreRecoveredOnSyntheticData) {
  // 60 cells x 12 replicates, s_between = 0.3, s_within = 0.5.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> cell(0, 0.3), noise(0, 0.5);
  std::vector<std::vector<double>> cells(60);
  for (auto& c : cells) {
    double a = cell(rng);
    for (int i = 0; i < 12; ++i) c.push_back(10 + a + noise(rng));
  }
  VarianceComponents v = variance_components(cells);
  EXPECT_NEAR(v.s2_between, 0.09, 0.035);
  EXPECT_NEAR(v.s2_within, 0.25, 0.02);
  EXPECT_LE(v.s2_between_ci.low, 0.09);
  EXPECT_GE(v.s2_between_ci.high, 0.09);
  EXPECT_LE(v.s2_within_ci.low, 0.25);
  EXPECT_GE(v.s2_within_ci.high, 0.25);
  EXPECT_DOUBLE_EQ(v.n0, 12);
  EXPECT_NEAR(v.icc, 0.09 / 0.34, 0.08);
}

// Over many synthetic studies the intervals cover the known components at
// about their nominal rate, also with unbalanced cells.
TEST(StatsTest, VarianceComponentIntervalsCoverAtTheirNominalRate) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> cell(0, 1.0), noise(0, 2.0);
  int between = 0, within = 0, trials = 400;
  for (int t = 0; t < trials; ++t) {
    std::vector<std::vector<double>> cells(8);
    for (size_t i = 0; i < cells.size(); ++i) {
      double a = cell(rng);
      for (size_t r = 0; r < 4 + i % 3; ++r) cells[i].push_back(a + noise(rng));
    }
    VarianceComponents v = variance_components(cells);
    between += v.s2_between_ci.low <= 1 && 1 <= v.s2_between_ci.high;
    within += v.s2_within_ci.low <= 4 && 4 <= v.s2_within_ci.high;
  }
  EXPECT_GT(between, trials * 0.91);
  EXPECT_GT(within, trials * 0.91);
  EXPECT_LT(within, trials * 0.985);
}

TEST(StatsTest, UnanswerableSamplesSaySoInsteadOfNaN) {
  using trainscope::core::Error;
  std::vector<double> one{0.9}, constant{0.5, 0.5, 0.5}, nan{0.1, NAN, 0.3};
  Summary s = summarize(one);
  EXPECT_EQ(s.n, 1);
  EXPECT_FALSE(s.sd.has_value());
  EXPECT_THROW(sd(one), Error);
  EXPECT_THROW(summarize(nan), Error);
  EXPECT_THROW(t_test_one_sample(constant, 0.5), Error);
  EXPECT_THROW(shapiro_wilk(constant), Error);
  EXPECT_THROW(bootstrap_sd_ci(constant), Error);
  EXPECT_THROW(anova_oneway({constant, constant}), Error);
  EXPECT_THROW(kruskal_wallis({constant, constant}), Error);
  EXPECT_THROW(anova_oneway({one}), Error);
  EXPECT_THROW(variance_components({constant, constant}), Error);
  EXPECT_THROW(levene({{1.0, 2.0}, {3.0, 5.0}}), Error);  // pairs: equal deviations
  // Groups of repeated values: deviations equal up to rounding.
  EXPECT_THROW(levene({{0.764, 0.764, 0.72, 0.72}, {0.584, 0.584, 0.548, 0.548}}), Error);
  try {
    summarize(nan, 1, 0.95, "test/accuracy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test/accuracy"), std::string::npos) << e.what();
  }
}

// Twentieth hunt, A-D6: runs whose lr was 0.1, 0.10 and 1e-1 were three
// groups, compared with each other. A decimal groups by its value.
TEST(StatsTest, OneValueWrittenThreeWaysIsOneGroup) {
  for (const char* same : {"0.1", "0.10", "1e-1", "+0.1", ".1"})
    EXPECT_EQ(group_label(same), "0.1") << same;
  EXPECT_EQ(group_label("-0"), "0");
  EXPECT_EQ(group_label("007"), "7");
  for (const char* text : {"adam", "0x10", "nan", "inf", "1e999", "0.1 ", "", "1-2"})
    EXPECT_EQ(group_label(text), text) << text;
}
