// Variance components of crossed factors: against the truth of data drawn
// here, ANOVA against REML on balanced data, and both against statsmodels
// (tests/stats/models_reference.py) and R's lme4 (lme4_reference.R).
#include "trainscope/stats/factors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/store.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace trainscope::stats;
using trainscope::core::Error;
using trainscope::core::ErrorKind;

namespace {

// A grid of crossed factors with known components: a random factor's
// levels are N(0, s2[f]); a fixed factor's effects are evenly spread with
// variance about s2[f]; every two-factor interaction is N(0, s2_pair) (in
// the data whether or not the model has it); the residual N(0, s2_e).
struct Grid {
  std::vector<std::string> names = {"A", "B"};
  std::vector<int> levels = {6, 5};
  std::vector<bool> fixed = {false, false};
  std::vector<double> s2 = {4, 2};
  double s2_pair = 1, s2_e = 0.5;
  int reps = 3;
  double drop = 0;  // chance a run is missing (unbalanced data)
};

std::string level_name(const std::string& factor, int i) {
  return fmt::format("{}{:02d}", factor, i);
}

FactorData draw(const Grid& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u;
  size_t k = g.names.size();
  std::vector<std::vector<double>> main(k);
  for (size_t f = 0; f < k; ++f)
    for (int l = 0; l < g.levels[f]; ++l)
      main[f].push_back(g.fixed[f] ? std::sqrt(3 * g.s2[f]) * (2.0 * l / (g.levels[f] - 1) - 1)
                                   : std::sqrt(g.s2[f]) * z(rng));
  std::map<std::pair<size_t, size_t>, std::map<std::pair<int, int>, double>> pair;
  FactorData d{g.names, g.fixed, {}};
  std::vector<int> at(k, 0);
  while (true) {
    double mu = 0.8;
    for (size_t f = 0; f < k; ++f) mu += main[f][at[f]];
    for (size_t f = 0; f < k; ++f)
      for (size_t h = f + 1; h < k; ++h) {
        auto& cell = pair[{f, h}];
        auto it = cell.find({at[f], at[h]});
        if (it == cell.end())
          it = cell.emplace(std::pair{at[f], at[h]}, std::sqrt(g.s2_pair) * z(rng)).first;
        mu += it->second;
      }
    for (int r = 0; r < g.reps; ++r) {
      double y = mu + std::sqrt(g.s2_e) * z(rng);
      if (u(rng) < g.drop) continue;
      FactorRow row{{}, y};
      for (size_t f = 0; f < k; ++f) row.levels.push_back(level_name(g.names[f], at[f]));
      d.rows.push_back(row);
    }
    size_t f = 0;
    while (f < k && ++at[f] == g.levels[f]) at[f++] = 0;
    if (f == k) break;
  }
  return d;
}

const FactorTerm& term(const FactorAnalysis& a, const std::string& name) {
  for (const auto& t : a.terms)
    if (t.name == name) return t;
  throw std::runtime_error("no term " + name);
}

double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

// ---- against the truth ---------------------------------------------------

// The ANOVA estimators are unbiased: over many grids their mean is within
// 4 standard errors of the truth, the standard error from the textbook
// sampling variance Var(MS_j) = 2 E[MS_j]^2 / df_j of the mean squares
// they combine (a x b grid, r runs per cell, everything random).
TEST(FactorsTest, AnovaEstimatorsAreUnbiased) {
  Grid g;
  const double a = 6, b = 5, r = 3, reps = 400;
  const double ems_a = g.s2_e + r * g.s2_pair + b * r * g.s2[0];
  const double ems_b = g.s2_e + r * g.s2_pair + a * r * g.s2[1];
  const double ems_ab = g.s2_e + r * g.s2_pair, ems_e = g.s2_e;
  const double df_a = a - 1, df_b = b - 1, df_ab = (a - 1) * (b - 1), df_e = a * b * (r - 1);
  auto v = [](double ems, double df) { return 2 * ems * ems / df; };
  std::map<std::string, std::pair<double, double>> expect = {
      // truth, SD of the estimate
      {"A", {g.s2[0], std::sqrt(v(ems_a, df_a) + v(ems_ab, df_ab)) / (b * r)}},
      {"B", {g.s2[1], std::sqrt(v(ems_b, df_b) + v(ems_ab, df_ab)) / (a * r)}},
      {"A:B", {g.s2_pair, std::sqrt(v(ems_ab, df_ab) + v(ems_e, df_e)) / r}},
      {"residual", {g.s2_e, std::sqrt(v(ems_e, df_e))}}};
  std::map<std::string, double> sum;
  FactorOptions o;
  o.reml = false;
  for (int i = 0; i < reps; ++i) {
    FactorAnalysis fa = analyse_factors(draw(g, 1000 + i), o);
    ASSERT_TRUE(fa.balanced);
    ASSERT_EQ(fa.method, "ANOVA");
    for (const auto& t : fa.terms) sum[t.name] += *t.anova_estimate;
  }
  for (const auto& [name, e] : expect) {
    double mean = sum[name] / reps, se = e.second / std::sqrt(reps);
    EXPECT_NEAR(mean, e.first, 4 * se) << name << ": mean of " << reps << " estimates";
  }
}

// REML on one unbalanced grid lands within 4 standard errors of the truth
// on the log scale (the SE from the expected information, as the interval).
TEST(FactorsTest, RemlOnUnbalancedDataIsNearTheTruth) {
  Grid g;
  g.levels = {14, 12};
  g.s2 = {1.0, 0.5};
  g.s2_pair = 0.3;
  g.s2_e = 0.2;
  g.reps = 2;
  g.drop = 0.25;
  FactorData d = draw(g, 7);
  FactorAnalysis fa = analyse_factors(d);
  EXPECT_FALSE(fa.balanced);
  EXPECT_EQ(fa.method, "REML");
  EXPECT_TRUE(fa.notes.size() == 1) << fa.notes.size();
  const double z = 1.959963984540054;
  std::map<std::string, double> truth = {
      {"A", g.s2[0]}, {"B", g.s2[1]}, {"A:B", g.s2_pair}, {"residual", g.s2_e}};
  double total = 0;
  for (const auto& t : fa.terms) total += t.variance;
  for (const auto& [name, s2] : truth) {
    const FactorTerm& t = term(fa, name);
    ASSERT_TRUE(t.reml_ci) << name;
    double se = std::log(t.reml_ci->high / t.reml_ci->low) / (2 * z);
    EXPECT_NEAR(std::log(*t.reml_estimate), std::log(s2), 4 * se) << name;
    EXPECT_LT(t.reml_ci->low, *t.reml_estimate);
    EXPECT_NEAR(t.share, t.variance / total, 1e-15);
    EXPECT_FALSE(t.anova);
  }
}

// ---- REML equals ANOVA on balanced data --------------------------------------

void expect_reml_equals_anova(const FactorData& d, const std::string& what, FactorOptions o = {}) {
  FactorAnalysis fa = analyse_factors(d, o);
  ASSERT_TRUE(fa.balanced) << what;
  EXPECT_TRUE(fa.notes.empty()) << what << ": " << fa.notes.front();
  for (const auto& t : fa.terms) {
    if (t.fixed) {
      EXPECT_FALSE(t.anova_estimate || t.reml_estimate) << what << " " << t.name;
      continue;
    }
    ASSERT_GT(*t.anova_estimate, 0) << what << " " << t.name;
    EXPECT_LT(rel(*t.reml_estimate, *t.anova_estimate), 1e-10)
        << what << " " << t.name << ": REML " << *t.reml_estimate << " ANOVA " << *t.anova_estimate;
  }
}

TEST(FactorsTest, RemlEqualsAnovaOnBalancedData) {
  Grid two;  // random x random with replicates: A, B, A:B
  expect_reml_equals_anova(draw(two, 1), "random x random");
  FactorOptions mains;
  mains.interactions = Interactions::kNone;
  expect_reml_equals_anova(draw(two, 1), "random x random, main effects only", mains);
  Grid mixed = two;  // fixed optimizer x random seed, one run per cell
  mixed.fixed = {true, false};
  mixed.levels = {4, 10};
  mixed.reps = 1;
  expect_reml_equals_anova(draw(mixed, 2), "fixed x random");
  mixed.reps = 3;  // ... with replicates: the random interaction
  expect_reml_equals_anova(draw(mixed, 3), "fixed x random, replicated");
  Grid three = two;  // three random factors, their pairs
  three.names = {"A", "B", "C"};
  three.levels = {4, 3, 5};
  three.fixed = {false, false, false};
  three.s2 = {3, 2, 1};
  three.reps = 2;
  expect_reml_equals_anova(draw(three, 4), "three factors with pairs");
}

// The mixed model's F tests: a main effect against the interaction's mean
// square when the interaction is random, the interaction against the
// residual; the fixed factor has no component and no share.
TEST(FactorsTest, MixedModelTable) {
  Grid g;
  g.fixed = {true, false};
  FactorAnalysis fa = analyse_factors(draw(g, 5));
  const FactorTerm& a = term(fa, "A");
  EXPECT_TRUE(a.fixed);
  EXPECT_EQ(a.anova->f_denominator, "A:B");
  EXPECT_EQ(term(fa, "B").anova->f_denominator, "A:B");
  EXPECT_EQ(term(fa, "A:B").anova->f_denominator, "residual");
  EXPECT_FALSE(term(fa, "A:B").fixed);
  EXPECT_EQ(a.share, 0);
  double shares = 0;
  for (const auto& t : fa.terms) shares += t.share;
  EXPECT_NEAR(shares, 1, 1e-14);
  EXPECT_EQ(fa.fixed_parameters, 6);  // intercept + 5 dummies
  // Without replicates the interaction is the residual.
  g.reps = 1;
  fa = analyse_factors(draw(g, 6));
  EXPECT_EQ(fa.terms.size(), 3u);
  EXPECT_EQ(term(fa, "B").anova->f_denominator, "residual");
}

// A component whose ANOVA estimate is negative: the reported variance is
// 0, REML puts it at the boundary, and the other components still agree
// with the fit without that term.
TEST(FactorsTest, NegativeEstimateIsTruncatedAndRemlAtZero) {
  Grid g;
  g.s2_pair = 0;
  g.s2 = {2, 0};
  for (uint64_t seed = 10; seed < 60; ++seed) {
    FactorData d = draw(g, seed);
    FactorAnalysis fa = analyse_factors(d);
    const FactorTerm& b = term(fa, "B");
    if (*b.anova_estimate >= 0) continue;
    EXPECT_EQ(b.variance, 0);
    EXPECT_EQ(b.share, 0);
    EXPECT_FALSE(b.anova_ci);
    EXPECT_GE(*b.reml_estimate, 0);
    return;
  }
  FAIL() << "no grid gave a negative estimate of B";
}

// ---- what the data cannot answer -------------------------------------------------

void expect_usage(const FactorData& d, const std::string& says, FactorOptions o = {}) {
  try {
    analyse_factors(d, o);
    ADD_FAILURE() << "no error; wanted: " << says;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(FactorsTest, RefusesWhatTheDataCannotAnswer) {
  Grid g;
  FactorData d = draw(g, 1);
  FactorData one = d;
  one.factors = {"A"};
  for (auto& r : one.rows) r.levels.resize(1);
  expect_usage(one, "1 factor(s)");
  FactorData single = d;
  for (auto& r : single.rows) r.levels[1] = "same";
  expect_usage(single, "factor 'B' has 1 level(s)");
  FactorData nan = d;
  nan.rows[3].value = NAN;
  expect_usage(nan, "row 4 holds nan");
  FactorData constant = d;
  for (auto& r : constant.rows) r.value = 0.5;
  expect_usage(constant, "every run gave 0.5");
  FactorData ragged = d;
  ragged.rows[0].levels.pop_back();
  expect_usage(ragged, "row 1 has 1 levels for 2 factors");
  FactorData twice = d;
  twice.factors = {"A", "A"};
  expect_usage(twice, "given twice");
  g.reps = 1;
  FactorOptions pairs;
  pairs.interactions = Interactions::kPairs;
  expect_usage(draw(g, 2), "the interaction cannot be told from the residual", pairs);
  g.drop = 0.2;
  FactorOptions anova_only;
  anova_only.reml = false;
  expect_usage(draw(g, 3), "unbalanced cells", anova_only);
}

// ---- against statsmodels and lme4 --------------------------------------------------

json reference_case(const FactorData& d, const FactorAnalysis& fa) {
  json c;
  for (size_t f = 0; f < d.factors.size(); ++f) {
    json col = json::array();
    for (const auto& r : d.rows) col.push_back(r.levels[f]);
    c["columns"][d.factors[f]] = col;
  }
  json y = json::array();
  for (const auto& r : d.rows) y.push_back(r.value);
  c["y"] = y;
  c["terms"] = json::array();
  for (const auto& t : fa.terms) {
    if (t.factors.empty()) continue;
    json names = json::array();
    for (int f : t.factors) names.push_back(d.factors[f]);
    c["terms"].push_back({{"name", t.name}, {"factors", names}, {"fixed", t.fixed}});
  }
  c["balanced"] = fa.balanced;
  return c;
}

// The reference fits: statsmodels' (python) and lme4's (R) on the same rows.
json references(const json& in, json& lme4) {
  trainscope::testing::TempDir dir;
  std::ofstream(dir / "in.json") << in.dump();
  std::string py = "/usr/bin/python3 " TS_MODELS_REFERENCE " " + (dir / "in.json").string() + " " +
                   (dir / "sm.json").string();
  EXPECT_EQ(std::system(py.c_str()), 0) << py;
  std::string r = "Rscript " TS_LME4_REFERENCE " " + (dir / "in.json").string() + " " +
                  (dir / "lme4.json").string();
  EXPECT_EQ(std::system(r.c_str()), 0) << r;
  lme4 = json::parse(std::ifstream(dir / "lme4.json"));
  return json::parse(std::ifstream(dir / "sm.json"));
}

struct Agreement {
  double anova = 0, sm = 0, sm_loglik = 0, lme4 = 0, lme4_loglik = 0;
};

void check_anova(const FactorAnalysis& fa, const json& sm, const json& lme4, Agreement& worst) {
  const json& rows = sm["anova"];
  for (size_t t = 0; t < fa.terms.size(); ++t) {
    const AnovaLine& l = *fa.terms[t].anova;
    EXPECT_EQ(rows[t]["name"], fa.terms[t].name);
    EXPECT_EQ(l.df, rows[t]["df"].get<double>()) << fa.terms[t].name;
    EXPECT_EQ(l.df, lme4["anova_df"][t].get<double>()) << fa.terms[t].name;
    for (double e :
         {rel(l.ss, rows[t]["ss"]), rel(l.ms, rows[t]["ms"]), rel(l.ss, lme4["anova_ss"][t])}) {
      EXPECT_LT(e, 1e-8) << fa.terms[t].name;
      worst.anova = std::max(worst.anova, e);
    }
  }
}

void check_reml(const FactorAnalysis& fa, const json& fit, double& worst, double& worst_loglik,
                double tol, const std::string& who) {
  for (const auto& t : fa.terms) {
    if (t.fixed) continue;
    double ref = fit["components"][t.name];
    // Relative to the total: a component at 0 has no relative error.
    double total = 0;
    for (const auto& u : fa.terms) total += u.fixed ? 0 : *u.reml_estimate;
    double e = std::fabs(*t.reml_estimate - ref) / total;
    EXPECT_LT(e, tol) << who << " " << t.name << ": ours " << *t.reml_estimate << ", " << ref;
    worst = std::max(worst, e);
  }
  double e = rel(fa.reml_log_likelihood, fit["loglik"]);
  EXPECT_LT(e, tol) << who << " REML log-likelihood: ours " << fa.reml_log_likelihood << ", "
                    << fit["loglik"];
  // Ours is the maximum: a reference's optimum is never higher.
  EXPECT_GE(fa.reml_log_likelihood,
            fit["loglik"].get<double>() - 1e-9 * std::fabs(fa.reml_log_likelihood))
      << who;
  worst_loglik = std::max(worst_loglik, e);
}

// EMS estimates of the two-factor random model from statsmodels' mean
// squares (the textbook formulas, written out independently of ours).
void check_ems(const FactorAnalysis& fa, const json& sm, int a, int b, int r) {
  auto ms = [&](int i) { return sm["anova"][i]["ms"].get<double>(); };
  double want[] = {(ms(0) - ms(2)) / (b * r), (ms(1) - ms(2)) / (a * r), (ms(2) - ms(3)) / r,
                   ms(3)};
  for (int t = 0; t < 4; ++t)
    EXPECT_LT(rel(*fa.terms[t].anova_estimate, want[t]), 1e-8) << fa.terms[t].name;
}

TEST(FactorsTest, AgainstStatsmodelsAndLme4) {
  std::vector<std::pair<std::string, Grid>> grids;
  Grid g;
  grids.push_back({"balanced random x random", g});
  g.drop = 0.2;
  grids.push_back({"unbalanced random x random", g});
  Grid m;
  m.fixed = {true, false};
  m.levels = {4, 12};
  m.reps = 1;
  grids.push_back({"balanced fixed x random, no replicates", m});
  m.reps = 2;
  m.drop = 0.25;
  grids.push_back({"unbalanced fixed x random, interaction", m});
  Grid three;
  three.names = {"A", "B", "C"};
  three.levels = {3, 2, 8};
  three.fixed = {true, true, false};
  three.s2 = {1, 1, 2};
  three.reps = 2;
  three.drop = 0.15;
  grids.push_back({"unbalanced fixed x fixed x random, pairs", three});
  std::vector<FactorData> data;
  std::vector<FactorAnalysis> ours;
  json in;
  for (size_t i = 0; i < grids.size(); ++i) {
    data.push_back(draw(grids[i].second, 100 + i));
    ours.push_back(analyse_factors(data.back()));
    in["factors"].push_back(reference_case(data.back(), ours.back()));
  }
  json lme4;
  json sm = references(in, lme4);
  Agreement worst;
  for (size_t i = 0; i < grids.size(); ++i) {
    SCOPED_TRACE(grids[i].first);
    const json& s = sm["factors"][i];
    const json& l = lme4["factors"][i];
    if (ours[i].balanced) check_anova(ours[i], s, l, worst);
    if (i == 0) check_ems(ours[i], s, 6, 5, 3);
    check_reml(ours[i], s["mixedlm"], worst.sm, worst.sm_loglik, 1e-5, "statsmodels");
    check_reml(ours[i], l, worst.lme4, worst.lme4_loglik, 3e-7, "lme4");
  }
  std::cout << fmt::format(
      "agreement (worst relative difference): ANOVA SS/MS {:.2g}; REML components "
      "(relative to their sum) statsmodels {:.2g}, lme4 {:.2g}; REML log-likelihood "
      "statsmodels {:.2g}, lme4 {:.2g}\n",
      worst.anova, worst.sm, worst.lme4, worst.sm_loglik, worst.lme4_loglik);
}

// ---- from the store ------------------------------------------------------------------

TEST(FactorsTest, CollectsFactorsFromTheStore) {
  trainscope::testing::TempDir dir;
  trainscope::store::StoreOptions so;
  so.uri = "sqlite:" + (dir / "t.db").string();
  auto store = trainscope::store::Store::open(so);
  Grid g;
  g.levels = {3, 4};
  g.reps = 2;
  FactorData d = draw(g, 9);
  for (const auto& row : d.rows) {
    auto run = store->create_run({});
    store->set_params(run.uuid, {{"optimizer", row.levels[0]}});
    store->set_tag(run.uuid, "seed", row.levels[1]);
    store->append_metrics(run.uuid, {{"acc", {{1, 0, row.value}}}});
    store->set_status(run.uuid, trainscope::store::RunStatus::kFinished);
  }
  // A diverged run (eighteenth hunt, A-D9): left out with one note, as the
  // per-group table and --compare leave it out.
  auto diverged = store->create_run({});
  store->set_params(diverged.uuid, {{"optimizer", d.rows[0].levels[0]}});
  store->set_tag(diverged.uuid, "seed", d.rows[0].levels[1]);
  store->append_metrics(diverged.uuid, {{"acc", {{1, 0, std::nan("")}}}});
  store->set_status(diverged.uuid, trainscope::store::RunStatus::kFinished);
  Selection s;
  s.metric = "acc";
  std::vector<std::string> notes;
  FactorData got = collect_factors(*store, s, {"optimizer", "tags.seed"}, notes);
  EXPECT_EQ(got.factors, (std::vector<std::string>{"optimizer", "tags.seed"}));
  ASSERT_EQ(got.rows.size(), d.rows.size());
  EXPECT_EQ(notes, (std::vector<std::string>{"run " + trainscope::core::short_uuid(diverged.uuid) +
                                             " left out: its acc is nan"}));
  FactorAnalysis from_store = analyse_factors(got), direct = analyse_factors(d);
  for (size_t t = 0; t < direct.terms.size(); ++t)
    EXPECT_NEAR(from_store.terms[t].variance, direct.terms[t].variance,
                1e-12 * direct.terms[t].variance + 1e-300);
}

}  // namespace
