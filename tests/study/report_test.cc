// The study report's parts of "Studies at the machine's limit" on real
// studies through the real CLI (a 2x2 grid and a sources study of a tiny MLP
// on synthetic data, 2 epochs, 3 replicates): the spread over training,
// the pairs of cells compared and the variance components by factor,
// checked against the stats functions on the values the store recorded;
// then the three parts in the HTML (in headless Chromium too), the
// Markdown and the JSON.
#include "trainscope/study/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/test_util.h"
#include "trainscope/stats/compare.h"
#include "trainscope/stats/stats.h"
#include "trainscope/store/store.h"

namespace fs = std::filesystem;
namespace stats = trainscope::stats;
namespace store = trainscope::store;
namespace study = trainscope::study;
namespace tst = trainscope::testing;
using Json = nlohmann::json;

namespace {

// Small enough to stay noisy: a 4-unit MLP, a few steps of plain SGD.
constexpr const char* kBase =
    "data: {dataset: synthetic, synthetic: {size: 256, classes: 10}}\n"
    "model: {name: mlp, hidden: 4}\n"
    "optimizer: {name: sgd, lr: 0.01}\n"
    "train: {epochs: 2, batch_size: 32}\n"
    "monitor: {interval_s: 0}\n";

class StudyReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tst::TempDir;
    std::ofstream(*dir_ / "base.yaml") << kBase;
    std::ofstream(*dir_ / "grid.yaml")
        << "study: grid\nbase: base.yaml\ngrid:\n  optimizer.lr: [0.01, 0.05]\n"
        << "  model.hidden: [4, 8]\nreplicates: 3\nvary: all\nworkers: 2\n";
    std::ofstream(*dir_ / "sources.yaml")
        << "study: sources\nbase: base.yaml\nsources: [init, all]\nreplicates: 3\nworkers: 2\n";
    std::ofstream(*dir_ / "wide.yaml")
        << "study: wide\nbase: base.yaml\ngrid:\n  optimizer.lr: [0.002, 0.004, 0.006, 0.008, "
        << "0.01, 0.012, 0.014, 0.016, 0.018, 0.02, 0.03, 0.04, 0.05]\nreplicates: 2\n"
        << "vary: all\nworkers: 2\nset: {train.epochs: 1}\n";
    for (const char* s : {"grid", "sources", "wide"}) {
      auto r = tst::run_command(cli("study run " + (*dir_ / (std::string(s) + ".yaml")).string() +
                                    " --logs " + (*dir_ / "logs").string()));
      if (r.exit_code != 0) setup_error_ += std::string(s) + ": " + r.out;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string cli(const std::string& args) {
    return std::string(TS_CLI_BIN) + " --store sqlite:" + (*dir_ / "s.db").string() + " " + args;
  }
  void SetUp() override {
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    store_ = store::Store::open({.uri = "sqlite:" + (*dir_ / "s.db").string(), .read_only = true});
  }
  // The runs' values of the metric at `epoch`, as the store recorded them.
  std::vector<double> at_epoch(const study::CellAnalysis& c, int64_t epoch) {
    std::vector<double> v;
    for (const auto& uuid : c.run_uuids)
      for (const auto& p : store_->metric(uuid, "test/accuracy"))
        if (p.step == epoch) v.push_back(p.value);
    return v;
  }
  void expect_epochs_match_the_store(const study::StudyAnalysis& a) {
    for (const auto& c : a.cells) {
      ASSERT_EQ(c.epochs.size(), 2u) << c.cell;
      for (int64_t e : {1, 2}) {
        const auto& got = c.epochs[e - 1];
        const auto v = at_epoch(c, e);
        ASSERT_EQ(v.size(), 3u) << c.cell;
        EXPECT_EQ(got.epoch, e);
        EXPECT_EQ(got.values, v);
        ASSERT_TRUE(got.sd) << c.cell;
        EXPECT_DOUBLE_EQ(*got.sd, stats::sd(v)) << c.cell << " epoch " << e;
        if (stats::sd(v) > 0) {
          ASSERT_TRUE(got.sd_ci);
          const auto ci = stats::bootstrap_sd_ci(v);
          EXPECT_DOUBLE_EQ(got.sd_ci->low, ci.low);
          EXPECT_DOUBLE_EQ(got.sd_ci->high, ci.high);
        }
      }
      EXPECT_EQ(c.epochs.back().values, c.values) << "the last epoch is the final value";
    }
  }
  std::string report(const std::string& name, const std::string& format) {
    auto r = tst::run_command(cli("study report " + name + " --format " + format));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.out;
  }

  static tst::TempDir* dir_;
  static std::string setup_error_;
  std::unique_ptr<store::Store> store_;
};

tst::TempDir* StudyReportTest::dir_ = nullptr;
std::string StudyReportTest::setup_error_;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_F(StudyReportTest, GridSpreadOverTrainingPairsAndFactors) {
  const auto a = study::analyse_study(*store_, "grid");
  ASSERT_EQ(a.cells.size(), 4u);
  expect_epochs_match_the_store(a);

  // Every pair of the 4 cells, or a note saying why not.
  EXPECT_TRUE(a.pairs_reference.empty());
  EXPECT_EQ(a.pairs_cells, 4);
  size_t skipped = std::count_if(a.notes.begin(), a.notes.end(),
                                 [](const std::string& n) { return has(n, "is not compared"); });
  EXPECT_EQ(a.pairs.size() + skipped, 6u);
  ASSERT_GE(a.pairs.size(), 1u);
  for (const auto& p : a.pairs) {
    const study::CellAnalysis *ca = nullptr, *cb = nullptr;
    for (const auto& c : a.cells) {
      if (c.cell == p.a) ca = &c;
      if (c.cell == p.b) cb = &c;
    }
    ASSERT_TRUE(ca && cb);
    EXPECT_DOUBLE_EQ(p.result.p_improvement,
                     stats::probability_of_improvement(ca->values, cb->values));
    EXPECT_DOUBLE_EQ(p.result.mean_difference, stats::mean(ca->values) - stats::mean(cb->values));
    if (p.result.runs_needed) {
      EXPECT_EQ(*p.result.runs_needed,
                stats::runs_needed(std::fabs(p.result.mean_difference), stats::sd(ca->values),
                                   stats::sd(cb->values)));
    }
  }

  // Variance components of the two factors, their interaction (the cells
  // hold replicates) and the residual.
  ASSERT_TRUE(a.factor_components) << (a.factor_notes.empty() ? "" : a.factor_notes[0]);
  const auto& f = *a.factor_components;
  EXPECT_EQ(f.factors, (std::vector<std::string>{"optimizer.lr", "model.hidden"}));
  EXPECT_EQ(f.n, 12);
  EXPECT_TRUE(f.balanced);
  EXPECT_EQ(f.replicates, 3);
  EXPECT_EQ(f.method, "ANOVA");
  std::vector<std::string> terms;
  double share = 0;
  for (const auto& t : f.terms) terms.push_back(t.name), share += t.share;
  EXPECT_EQ(terms, (std::vector<std::string>{"optimizer.lr", "model.hidden",
                                             "optimizer.lr:model.hidden", "residual"}));
  EXPECT_NEAR(share, 1.0, 1e-12);

  const std::string html = study::html_report(a), md = study::markdown_report(a);
  for (const char* h : {"Spread over training", "Comparing cells", "Variance by factor"}) {
    EXPECT_TRUE(has(html, std::string("<h2>") + h + "</h2>")) << h;
    EXPECT_TRUE(has(md, std::string("## ") + h)) << h;
  }
  EXPECT_TRUE(has(md, "| epoch 1 | epoch 2 |")) << md;
  EXPECT_TRUE(has(md, "optimizer.lr:model.hidden")) << md;
  EXPECT_TRUE(has(html, "across each cell's runs"));

  const Json j = Json::parse(report("grid", "json"));
  ASSERT_EQ(j["cells"].size(), 4u);
  // The grid varies model.hidden: each cell's weights are read with a model
  // of its own shape (weights.cc once built one model for every cell).
  std::set<std::string> weighed;
  for (const auto& w : j["weights"]) weighed.insert(w["cell"].get<std::string>());
  EXPECT_EQ(weighed.size(), 4u) << j["weights"].dump();
  EXPECT_EQ(j["cells"][0]["epochs"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["cells"][0]["epochs"][1]["sd"].get<double>(), *a.cells[0].epochs[1].sd);
  ASSERT_EQ(j["pair_comparisons"]["pairs"].size(), a.pairs.size());
  EXPECT_DOUBLE_EQ(j["pair_comparisons"]["pairs"][0]["p_improvement"].get<double>(),
                   a.pairs[0].result.p_improvement);
  ASSERT_TRUE(j["factor_components"].is_object()) << j.dump(2);
  EXPECT_EQ(j["factor_components"]["terms"].back()["name"], "residual");

  // In a real browser: every table and plot drawn, nothing fetched.
  const fs::path file = *dir_ / "grid.html";
  std::ofstream(file) << html;
  auto browser = tst::run_command(std::string(TS_BROWSER_CHECK) + " " + file.string() +
                                  " " TS_SCREENSHOT " 6 5");
  EXPECT_EQ(browser.exit_code, 0) << browser.out;
}

TEST_F(StudyReportTest, SourcesRatioToAllByEpochAndNoFactorTable) {
  const auto a = study::analyse_study(*store_, "sources");
  ASSERT_EQ(a.cells.size(), 2u);
  expect_epochs_match_the_store(a);
  const auto& all = a.cells[1];
  ASSERT_EQ(all.cell, "all");
  for (const auto& c : a.cells)
    for (size_t e = 0; e < c.epochs.size(); ++e) {
      if (*all.epochs[e].sd == 0) continue;
      ASSERT_TRUE(c.epochs[e].sd_ratio) << c.cell;
      EXPECT_DOUBLE_EQ(*c.epochs[e].sd_ratio, *c.epochs[e].sd / *all.epochs[e].sd);
    }
  EXPECT_FALSE(a.factor_components);  // one-way: the per-cell components say it
  EXPECT_LE(a.pairs.size(), 1u);

  const std::string html = study::html_report(a), md = study::markdown_report(a);
  EXPECT_TRUE(has(html, "<h2>Spread over training</h2>"));
  EXPECT_FALSE(has(html, "Variance by factor"));
  EXPECT_TRUE(has(html, "SD / SD(all)"));
  EXPECT_TRUE(has(html, "ratio 0.8"));  // the reference line's legend
  EXPECT_TRUE(has(md, "; ratio ")) << md;
  const Json j = Json::parse(report("sources", "json"));
  EXPECT_TRUE(j["factor_components"].is_null());
  EXPECT_TRUE(j["cells"][0]["epochs"][0].contains("sd_ratio_to_all"));
}

TEST_F(StudyReportTest, PastTwelveCellsEachAgainstTheFirstAndOneFactorHasNoFactorTable) {
  const auto a = study::analyse_study(*store_, "wide");
  ASSERT_EQ(a.cells.size(), 13u);
  EXPECT_EQ(a.pairs_reference, a.cells[0].cell);
  size_t skipped = std::count_if(a.notes.begin(), a.notes.end(),
                                 [](const std::string& n) { return has(n, "is not compared"); });
  EXPECT_EQ(a.pairs.size() + skipped, 12u);
  for (const auto& p : a.pairs) EXPECT_EQ(p.a, a.cells[0].cell);
  EXPECT_FALSE(a.factor_components);
  for (const auto& c : a.cells) {  // one epoch: one column
    ASSERT_EQ(c.epochs.size(), 1u);
    EXPECT_EQ(c.epochs[0].values, c.values);
  }
  const std::string md = study::markdown_report(a);
  EXPECT_TRUE(has(md, "Each of the 13 cells against the first, " + a.cells[0].cell)) << md;
  EXPECT_TRUE(has(md, "| cell | epoch 1 |\n")) << md;
  EXPECT_FALSE(has(md, "Variance by factor"));
  const Json j = Json::parse(report("wide", "json"));
  EXPECT_EQ(j["pair_comparisons"]["reference"], a.cells[0].cell);
}
