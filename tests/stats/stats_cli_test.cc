// `trainscope stats --compare` and `trainscope stats --by K1 --by K2` on a
// real store: the executable prints what the library computes, and bad
// input is one line with exit code 2 (usage) or 3 (not found).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "support/test_util.h"
#include "trainscope/stats/compare.h"
#include "trainscope/stats/factors.h"
#include "trainscope/store/store.h"

namespace {

using nlohmann::json;
using trainscope::testing::run_command;
using trainscope::testing::shell_quote;
namespace st = trainscope::stats;

class StatsCliTest : public ::testing::Test {
 protected:
  // 3 optimizers x 5 seeds x 2 runs, the optimizer and seed as params.
  void SetUp() override {
    trainscope::store::StoreOptions o;
    o.uri = uri();
    auto store = trainscope::store::Store::open(o);
    std::mt19937_64 rng(11);
    std::normal_distribution<double> z;
    std::vector<double> seed_effect;
    for (int s = 0; s < 5; ++s) seed_effect.push_back(0.004 * z(rng));
    const char* optimizers[] = {"adam", "sgd", "lamb"};
    for (int k = 0; k < 3; ++k)
      for (int s = 0; s < 5; ++s)
        for (int r = 0; r < 2; ++r) {
          double v = 0.85 + 0.003 * k + seed_effect[s] + 0.002 * z(rng);
          auto run = store->create_run({});
          store->set_params(run.uuid, {{"opt", optimizers[k]}, {"seed", std::to_string(s)}});
          store->append_metrics(run.uuid, {{"acc", {{1, 0, v}}}});
          store->set_status(run.uuid, trainscope::store::RunStatus::kFinished);
          values_[optimizers[k]].push_back(v);
        }
  }
  std::string uri() const { return "sqlite:" + (dir_ / "t.db").string(); }
  trainscope::testing::CommandResult ts(const std::string& args) {
    return run_command(std::string(TS_CLI_BIN) + " --store " + shell_quote(uri()) + " " + args);
  }
  trainscope::testing::TempDir dir_;
  std::map<std::string, std::vector<double>> values_;
};

TEST_F(StatsCliTest, CompareTwoGroups) {
  auto r = ts("--json stats acc --by opt --compare lamb adam --delta 0.004");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  st::CompareOptions o;
  o.delta = 0.004;
  st::PairComparison c = st::compare(values_["lamb"], values_["adam"], o);
  EXPECT_DOUBLE_EQ(j["p_improvement"].get<double>(), c.p_improvement);
  EXPECT_DOUBLE_EQ(j["p_improvement_ci"]["low"].get<double>(), c.p_improvement_ci.low);
  EXPECT_DOUBLE_EQ(j["mean_difference_ci"]["high"].get<double>(), c.mean_difference_ci->high);
  EXPECT_EQ(j["runs_needed"].get<int64_t>(), *c.runs_needed);
  EXPECT_EQ(j["a"], "lamb");
  EXPECT_EQ(j["summary_a"]["n"], 10);
  auto text = ts("stats acc --by opt --compare lamb adam");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  for (const char* line : {"P(A > B)", "mean(A) - mean(B)", "runs needed per side"})
    EXPECT_NE(text.out.find(line), std::string::npos) << text.out;
}

TEST_F(StatsCliTest, FactorTable) {
  auto r = ts("--json stats acc --by opt --by seed --fixed opt");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["method"], "ANOVA");
  EXPECT_TRUE(j["balanced"].get<bool>());
  std::vector<std::string> names;
  for (const auto& t : j["terms"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"opt", "seed", "opt:seed", "residual"}));
  EXPECT_TRUE(j["terms"][0]["fixed"].get<bool>());
  EXPECT_EQ(j["terms"][0]["anova"]["f_denominator"], "opt:seed");
  auto text = ts("stats acc --by opt --by seed --interactions none");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  for (const char* s : {"TERM", "SHARE", "residual", "components by ANOVA"})
    EXPECT_NE(text.out.find(s), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("opt:seed"), std::string::npos) << text.out;
}

TEST_F(StatsCliTest, BadInputIsOneLine) {
  struct Bad {
    std::string args, says;
    int code;
  };
  for (const Bad& b : std::vector<Bad>{
           {"stats acc --compare adam sgd", "give exactly one --by", 2},
           {"stats acc --by opt --by seed --compare adam sgd", "give exactly one --by", 2},
           {"stats acc --by opt --compare adam nadam", "no run is in group 'nadam'", 3},
           {"stats acc --by opt --compare adam adam", "compare two different groups", 2},
           {"stats acc --by opt --delta 0.1", "give --compare", 2},
           {"stats acc --by opt --by seed --fixed lr", "--fixed lr is not one of", 2},
           {"stats acc --by opt --fixed opt", "two or more --by", 2},
           {"stats acc --by opt --by seed -f csv", "use text or json", 2},
           {"stats acc --by opt --by seed --interactions pairs --by name", "factor 'name' has",
            2}}) {
    auto r = ts(b.args);
    EXPECT_EQ(r.exit_code, b.code) << b.args << ": " << r.out;
    EXPECT_NE(r.out.find(b.says), std::string::npos) << b.args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << b.args << ": " << r.out;
  }
}

}  // namespace
