// Study files: what they plan, and the one-line errors for bad ones.
#include "trainscope/study/spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/study/executor.h"

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

TEST_F(SpecTest, AFactorOfNamedLevelsSetsSeveralKeysPerCell) {
  // BRIEF §1's three optimizers: no one key takes them as values.
  StudySpec s = parse(
      "study: s\nbase: base.yaml\n"
      "grid:\n  optimizer:\n    adadelta: {optimizer.name: adadelta, optimizer.lr: 1.0}\n"
      "    nesterov: {optimizer.name: sgd, optimizer.momentum: 0.5, optimizer.nesterov: true}\n"
      "  seeds.master: [7184, 13474]\nreplicates: 2\n");
  auto runs = plan(s);
  ASSERT_EQ(runs.size(), 8u);
  EXPECT_EQ(runs[0].name, "optimizer=adadelta,seeds.master=7184/r1");
  EXPECT_EQ(runs[4].cell, "optimizer=nesterov,seeds.master=7184");
  auto lines = set_lines(runs[4]);
  for (const char* want : {"optimizer.name=sgd", "optimizer.momentum=0.5",
                           "optimizer.nesterov=true", "seeds.master=7184"})
    EXPECT_NE(std::find(lines.begin(), lines.end(), want), lines.end()) << want;
  EXPECT_EQ(std::find(lines.begin(), lines.end(), "optimizer.lr=1.0"), lines.end());
  using Levels = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(runs[4].levels, (Levels{{"optimizer", "nesterov"}, {"seeds.master", "7184"}}));
  // A key set by a level and by set:, or by two factors, or a level name a
  // cell's name cannot hold, is one line naming it.
  EXPECT_NE(error_of("study: s\nbase: base.yaml\nset: {optimizer.lr: 0.1}\n"
                     "grid:\n  o: {a: {optimizer.lr: 1.0}, b: {optimizer.lr: 2.0}}\n")
                .find("set.optimizer.lr is also varied by grid"),
            std::string::npos);
  EXPECT_NE(error_of("study: s\nbase: base.yaml\ngrid:\n  o: {a: {optimizer.lr: 1.0}}\n"
                     "  optimizer.lr: [0.1, 0.2]\n")
                .find("which grid.o sets too"),
            std::string::npos);
  EXPECT_NE(error_of("study: s\nbase: base.yaml\ngrid:\n  o: {'a,b': {optimizer.lr: 1.0}}\n")
                .find("is no level name"),
            std::string::npos);
  EXPECT_NE(error_of("study: s\nbase: base.yaml\ngrid:\n  o: {a: {optimizer: {lr: 1.0}}}\n")
                .find("must be a value"),
            std::string::npos);
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

TEST_F(SpecTest, TheWorldSizeSourceCyclesOneToFourRanks) {
  StudySpec s = parse("study: s\nbase: base.yaml\nsources: [world_size]\nreplicates: 6\n");
  auto runs = plan(s);
  ASSERT_EQ(runs.size(), 6u);
  std::vector<std::string> nprocs;
  for (const auto& r : runs) nprocs.push_back(set_lines(r).back());
  EXPECT_EQ(nprocs, (std::vector<std::string>{"dist.nproc=1", "dist.nproc=2", "dist.nproc=3",
                                              "dist.nproc=4", "dist.nproc=1", "dist.nproc=2"}));
  EXPECT_EQ(runs[0].vary, "world_size");
}

// The GPU's sources: kernels fixes every seed and allows non-deterministic
// kernels in every replicate; precision goes through float32, TF32 and bf16.
TEST_F(SpecTest, TheKernelsAndPrecisionSourcesSetTheGpusSwitches) {
  StudySpec s = parse("study: s\nbase: base.yaml\nsources: [kernels, precision]\nreplicates: 3\n");
  auto runs = plan(s);
  ASSERT_EQ(runs.size(), 6u);
  for (int r = 0; r < 3; ++r) {
    auto lines = set_lines(runs[r]);
    EXPECT_EQ(runs[r].vary, "kernels");
    EXPECT_NE(std::find(lines.begin(), lines.end(), "determinism.deterministic_algorithms=false"),
              lines.end());
    EXPECT_NE(std::find(lines.begin(), lines.end(), "determinism.cudnn_deterministic=false"),
              lines.end());
    for (const auto& l : lines) EXPECT_EQ(l.rfind("seeds.", 0), std::string::npos) << l;
  }
  std::vector<std::vector<std::string>> precision;
  for (int r = 3; r < 6; ++r) {
    auto lines = set_lines(runs[r]);
    precision.emplace_back(lines.end() - 2, lines.end());
  }
  using L = std::vector<std::string>;
  EXPECT_EQ(precision, (std::vector<L>{L{"compute.tf32=off", "compute.autocast=off"},
                                       L{"compute.tf32=on", "compute.autocast=off"},
                                       L{"compute.tf32=off", "compute.autocast=bf16"}}));
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
      {base + "sources: [init]\nreplicates: 99999999999\n",
       "replicates is 99999999999: must be at most 1000000"},
      {base + "sources: [init]\nreplicates: many\n", "replicates must be an integer"},
      {base + "sources: [init]\nretries: 100000\n", "retries is 100000: must be at most 100"},
      {base + "sources: [init]\nreplicates: 2\nreplicates: 5\n", "line 5"},
      {base + "sources: [init]\n---\nreplicates: 5\n", "line 5: a second YAML document"},
      {base + "sources: [init]\nset: " + std::string(200, '[') + std::string(200, ']') + "\n",
       "nested deeper than"},
      // Thirteenth hunt, A-D4: a grid key holding '=' set another key
      // ("note=x": [1] recorded note = "x=1"); an empty one was launched.
      {base + "grid: {\"note=x\": [1, 2]}\n",
       "grid.note=x names no config key: a key holds no '='"},
      {base + "grid: {\"\": [1, 2]}\n", "grid. names no config key: the key is empty"},
      {base + "grid: {\"a\\tb\": [1, 2]}\n", "holds a control character"},
      {base + "sources: [init]\nset: {\"train.epochs=1\": 2}\n",
       "set.train.epochs=1 names no config key"},
      // Fourteenth hunt, D2: an empty set key, or a lone value, gave every
      // run the setting "=3".
      {base + "sources: [init]\nset: {\"\": 3}\n", "set names no config key"},
      {base + "sources: [init]\nset: 3\n", "set names no config key"},
      {base + "sources: [init]\nset:\n", "set names no config key"},
      {base + "sources: [init]\nset: {a: [1, 2]}\n", "set.a must be a value"},
      // Thirtieth hunt, B-D7: a key set and varied: the grid's value won.
      {base + "set: {a.b: 2}\ngrid: {a.b: [1, 3]}\n", "set.a.b is also varied by grid"},
      {base + "set: {a.b: 2}\ngrid: {c: [1]}\nvary: a.b\n", "set.a.b is also varied by vary"},
      {base + "grid: {c: [1]}\nquick: {set: {a.b: 2}, grid: {a.b: [1]}}\n",
       "set.a.b is also varied by grid"},
      // B-D6: quick: was read only under --quick, its keys never checked.
      {base + "grid: {c: [1]}\nquick: {colour: 1}\n", "quick.colour is not a key --quick"},
      {base + "grid: {c: [1]}\nquick: {study: other}\n", "quick.study is not a key --quick"},
      {base + "grid: {c: [1]}\nquick: true\n", "quick must be a map"},
      {base + "grid: {c: [1]}\nquick: {replicates: 1000001}\n",
       "replicates is 1000001: must be at most 1000000"},
  };
  for (const auto& c : cases) {
    std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.text << " -> " << e;
    EXPECT_NE(e.find("study.yaml"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST_F(SpecTest, APlanIsCountedWithoutBeingBuiltAndEachRunComputedAlone) {
  std::string grid = "study: s\nbase: base.yaml\ngrid:\n";
  for (int k = 0; k < 7; ++k) {
    grid += "  k" + std::to_string(k) + ": [";
    for (int v = 0; v < 20; ++v) grid += (v ? ", " : "") + std::to_string(v);
    grid += "]\n";
  }
  StudySpec huge = parse(grid + "replicates: 2\ndeterministic: true\nvary: init\n");
  const Plan p(huge);
  // 20^7 cells x (2 varied + 2 exact repeats).
  EXPECT_EQ(p.size(), 1280000000ull * 4);
  const PlannedRun last = p.at(p.size() - 1);
  EXPECT_EQ(last.name, "k0=19,k1=19,k2=19,k3=19,k4=19,k5=19,k6=19,deterministic/r2");
  EXPECT_THROW(plan(huge), Error);  // a list of them is refused, not attempted
  // A grid beyond 64 bits saturates instead of wrapping around.
  std::string wider = "study: s\nbase: base.yaml\ngrid:\n";
  for (int k = 0; k < 20; ++k)
    wider += "  k" + std::to_string(k) + ": [" +
             std::string(
                 "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, "
                 "22, 23") +
             "]\n";
  StudySpec beyond = parse(wider + "replicates: 2\n");
  EXPECT_EQ(Plan(beyond).size(), std::numeric_limits<uint64_t>::max());

  // Computed one at a time, the runs are the list's, and found by name.
  StudySpec small = parse(
      "study: s\nbase: base.yaml\ngrid: {a: [1, 2], b: [x, y, z]}\nreplicates: 3\n"
      "vary: data_order\ndeterministic: true\n");
  const Plan sp(small);
  const auto all = plan(small);
  ASSERT_EQ(sp.size(), all.size());
  for (uint64_t i = 0; i < sp.size(); ++i) {
    EXPECT_EQ(sp.at(i).name, all[i].name);
    EXPECT_EQ(set_lines(sp.at(i)), set_lines(all[i]));
    EXPECT_EQ(sp.find(all[i].name), i);
  }
  EXPECT_EQ(sp.find("a=3,b=x/r1"), std::nullopt);
}

TEST_F(SpecTest, ARecordedStudyReadsBackWithoutItsFiles) {
  StudySpec s = parse("study: s\nbase: base.yaml\nsources: [init]\nreplicates: 2\n");
  s.resolved_base = "train:\n  epochs: 1\n";
  const std::string recorded = recorded_text(s);
  std::filesystem::remove(dir_ / "base.yaml");
  StudySpec back = parse_recorded(recorded, dir_ / "study.yaml", false);
  EXPECT_EQ(back.resolved_base, s.resolved_base);
  EXPECT_EQ(back.name, "s");
  EXPECT_EQ(Plan(back).size(), 2u);
  // A study recorded before plans were: no resolved base, and no file needed.
  StudySpec old = parse_recorded(s.text, dir_ / "study.yaml", false);
  EXPECT_TRUE(old.resolved_base.empty());
  EXPECT_THROW(parse(s.text), Error);  // from the file, the base must exist
}

// Issue 51: a study file that is a FIFO is refused at once (it hung `study
// run` in open()); what goes into an sbatch script is one line each (a log
// folder holding a newline would have started a command of its own).
TEST_F(SpecTest, AFifoStudyFileAndAMultiLineSlurmValueAreRefused) {
  const auto fifo = dir_ / "fifo.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    load_study(fifo, false);
    ADD_FAILURE() << "a FIFO was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read study file '" + fifo.string() +
                                         "': it is a FIFO (named pipe), not a regular file; give "
                                         "the path of a file");
  }
  SlurmOptions o;
  o.dir = "/logs/study";
  o.partition = "gpu";
  o.task_command = {"trainscope", "study", "task", "s"};
  const std::string script = slurm_script(o, "/logs/study/array-1-list.txt", 3);
  EXPECT_NE(script.find("#SBATCH --partition=gpu\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --array=0-2\n"), std::string::npos) << script;
  o.dir = "/logs/x\nrm -rf ~";
  EXPECT_THROW(slurm_script(o, "/logs/list.txt", 3), Error);
  o.dir = "/logs/study";
  o.partition = "gpu --wrap=id";
  EXPECT_THROW(slurm_script(o, "/logs/list.txt", 3), Error);
}
