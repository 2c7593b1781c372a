// Study files: what they plan, and the one-line errors for bad ones.
#include "trainscope/study/spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "support/test_util.h"
#include "trainscope/core/error.h"

using namespace trainscope::study;
using trainscope::core::Error;
using trainscope::testing::TempDir;

namespace {

class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir_ / "base.yaml") << "train:\n  epochs: 1\n"; }
  StudySpec parse(const std::string& text, bool quick = false) {
    return parse_study(text, dir_ / "study.yaml", quick);
  }
  std::string error_of(const std::string& text) {
    try {
      parse(text);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  TempDir dir_;
};

}  // namespace

TEST_F(SpecTest, GridPlansEveryCellWithItsReplicatesAndDeterministicCells) {
  StudySpec s = parse(
      "study: s\nbase: base.yaml\nset: {train: {epochs: 2}}\n"
      "grid:\n  optimizer.name: [adam, sgd]\n  seeds.master: [0, 42, 7]\n"
      "replicates: 3\nvary: data_order\ndeterministic: true\n");
  auto runs = plan(s);
  // 6 cells x 3 varied + 6 deterministic cells x 3.
  ASSERT_EQ(runs.size(), 36u);
  EXPECT_EQ(runs[0].name, "optimizer.name=adam,seeds.master=0/r1");
  EXPECT_EQ(runs[3].cell, "optimizer.name=adam,seeds.master=0,deterministic");
  EXPECT_EQ(runs[3].vary, "none");
  auto lines = set_lines(runs[2]);
  EXPECT_EQ(lines.front(), "compute.threads=1");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "train.epochs=2"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "seeds.master=0"), lines.end());
  EXPECT_EQ(lines.back(), "seeds.data_order=3");
  EXPECT_TRUE(set_lines(runs[3]).back() == "seeds.master=0");  // exact repeats: no replicate key
  EXPECT_EQ(runs.back().name, "optimizer.name=sgd,seeds.master=7,deterministic/r3");
}

TEST_F(SpecTest, SourcesVaryOneSourceEach) {
  StudySpec s = parse(
      "study: s\nbase: base.yaml\nsources: [init, implementation, all, bitflip, deterministic]\n"
      "replicates: 16\n");
  auto runs = plan(s);
  ASSERT_EQ(runs.size(), 16u * 4 + 3);
  EXPECT_EQ(set_lines(runs[0]).back(), "seeds.init=1");
  EXPECT_EQ(set_lines(runs[32]).back(), "seeds.master=1");
  EXPECT_EQ(set_lines(runs[48]).back(), "model.flip_bit=1");
  // Implementation replicates cycle through 16 distinct settings.
  std::set<std::vector<std::string>> impl;
  for (int r = 16; r < 32; ++r) impl.insert(set_lines(runs[r]));
  EXPECT_EQ(impl.size(), 16u);
}

TEST_F(SpecTest, QuickSectionReplacesFactorsAndReplicates) {
  StudySpec s = parse(
      "study: s\nbase: base.yaml\ngrid: {a.b: [1, 2, 3]}\nreplicates: 5\nvary: all\n"
      "quick: {grid: {a.b: [1]}, replicates: 2, set: {data.train_subset: 100}}\n",
      true);
  auto runs = plan(s);
  ASSERT_EQ(runs.size(), 2u);
  auto lines = set_lines(runs[0]);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "data.train_subset=100"), lines.end());
}

TEST_F(SpecTest, BadStudiesSayWhatAndWhereInOneLine) {
  const std::string base = "study: s\nbase: base.yaml\n";
  struct Bad {
    std::string text, expect;
  } cases[] = {
      {base + "grid: {a: [1]}\nreplicate: 3\n", "replicate is not a study key"},
      {base + "grid: {}\n", "grid is empty"},
      {base + "grid: {a: []}\n", "grid.a needs a non-empty list"},
      {base + "grid: {a: [1]}\nreplicates: 1\n", "an SD needs at least 2 runs"},
      {base + "sources: [init, moon]\n", "unknown source 'moon'"},
      {"study: s\nbase: nowhere.yaml\ngrid: {a: [1]}\n", "does not exist"},
      {base, "grid and sources are both missing"},
      {base + "grid: {a: [1]}\nvary: phase\n", "vary is 'phase'"},
  };
  for (const auto& c : cases) {
    std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.text << " -> " << e;
    EXPECT_NE(e.find("study.yaml"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}
