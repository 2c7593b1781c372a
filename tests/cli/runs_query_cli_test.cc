// `runs list --filter/--columns/--sort/--format` and `runs export` of many
// runs, on a real store of 1,000 runs; a read-only store stays untouched.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_util.h"
#include "trainscope/core/util.h"
#include "trainscope/store/store.h"

namespace trainscope {
namespace {
using store::RunStatus;
using testing::CommandResult;
using testing::run_command;
using testing::shell_quote;

const char* kOptimizers[] = {"adam", "sgd", "rmsprop"};

class RunsQueryCliTest : public ::testing::Test {
 protected:
  std::string uri() const { return "sqlite:" + (dir_ / "t.db").string(); }
  CommandResult ts(const std::string& args, const std::string& prefix = "") {
    return run_command(prefix + TS_CLI_BIN + " --store " + shell_quote(uri()) + " " + args);
  }
  // Run i: optimizer i % 3, lr one of four spellings, accuracy i / 1000;
  // every 7th run has no params, every 11th no metric.
  void fill(int n) {
    store::StoreOptions o;
    o.uri = uri();
    auto s = store::Store::open(o);
    const char* lrs[] = {"0.1", "0.01", "1e-3", "3e-4"};
    for (int i = 0; i < n; ++i) {
      auto r =
          s->create_run({.experiment = i % 2 ? "odd" : "even", .name = fmt::format("r{:04}", i)});
      if (i % 7)
        s->set_params(r.uuid,
                      {{"optimizer.name", kOptimizers[i % 3]}, {"optimizer.lr", lrs[i % 4]}});
      if (i % 11) s->append_metrics(r.uuid, {{"test/accuracy", {{i, 1.0 * i, i / 1000.0}}}});
      s->set_status(r.uuid, RunStatus::kFinished);
    }
  }
  static bool expected(int i) { return i % 7 && i % 11 && i / 1000.0 > 0.9 && i % 3 == 0; }

  testing::TempDir dir_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_F(RunsQueryCliTest, FiltersSortsAndPrintsColumnsOfAThousandRuns) {
  fill(1000);
  auto r =
      ts("runs list --all --format csv --sort name --filter "
         "\"metrics.test/accuracy > 0.9 and params.optimizer.name = 'adam'\" "
         "--columns name,params.optimizer.name,params.optimizer.lr,metrics.test/accuracy");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "name,params.optimizer.name,params.optimizer.lr,metrics.test/accuracy");
  std::vector<std::string> want;
  for (int i = 0; i < 1000; ++i)
    if (expected(i))
      want.push_back(fmt::format("r{:04},adam,{},{}", i,
                                 std::vector<std::string>{"0.1", "0.01", "1e-3", "3e-4"}[i % 4],
                                 core::format_double(i / 1000.0)));
  EXPECT_EQ(std::vector<std::string>(lines.begin() + 1, lines.end()), want);
  EXPECT_GT(want.size(), 20u);

  auto json =
      ts("runs list --format json --limit 6 --sort \"metrics.test/accuracy desc\" "
         "--columns name,metrics.test/accuracy,params.*");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["total"], 1000);
  ASSERT_EQ(j["runs"].size(), 6u);
  EXPECT_EQ(j["runs"][0]["name"], "r0999");
  EXPECT_TRUE(j["runs"][0]["metrics.test/accuracy"].is_number());
  EXPECT_EQ(j["runs"][0]["metrics.test/accuracy"].get<double>(), 0.999);
  EXPECT_EQ(j["columns"][2], "params.optimizer.lr");
  EXPECT_EQ(j["runs"][5]["name"], "r0994");
  EXPECT_TRUE(j["runs"][5]["params.optimizer.lr"].is_null());  // 994 % 7 == 0: no params
  EXPECT_EQ(j["runs"][4]["params.optimizer.lr"], "3e-4");      // a string, as recorded

  auto table =
      ts("runs list --filter \"params.optimizer.lr = 0.001 and experiment = 'even'\" "
         "--columns name,params.optimizer.lr --sort name --limit 3");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  auto t = lines_of(table.out);
  ASSERT_GE(t.size(), 4u) << table.out;
  EXPECT_NE(t[0].find("params.optimizer.lr"), std::string::npos);
  EXPECT_EQ(t[1].substr(0, 5), "r0002");  // 1e-3 == 0.001 as numbers
  EXPECT_EQ(t[2].substr(0, 5), "r0006");
  EXPECT_NE(table.out.find("showing 3 of"), std::string::npos) << table.out;
}

TEST_F(RunsQueryCliTest, AMalformedFilterIsOneLineNamingTheColumn) {
  fill(3);
  auto r =
      ts("runs list --filter \"metrics.test/accuracy > 0.9 and params.optimizer.name = adam\"");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(lines_of(r.out).size(), 1u) << r.out;
  EXPECT_NE(r.out.find("filter column 57: 'adam' is not a value"), std::string::npos) << r.out;
  auto sort = ts("runs list --sort \"metrics.x upward\"");
  EXPECT_EQ(sort.exit_code, 2) << sort.out;
  auto cols = ts("runs list --columns name,colour");
  EXPECT_EQ(cols.exit_code, 2) << cols.out;
  EXPECT_NE(cols.out.find("unknown field 'colour'"), std::string::npos) << cols.out;
}

TEST_F(RunsQueryCliTest, ExportsTheMetricPointsOfManyRunsInOneLongTable) {
  fill(30);
  auto r = ts("runs export --filter \"params.optimizer.name = 'sgd'\" --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto lines = lines_of(r.out);
  EXPECT_EQ(lines[0], "run,name,key,step,wall_time,value");
  size_t want = 0;
  for (int i = 0; i < 30; ++i) want += (i % 7 && i % 11 && i % 3 == 1) ? 1 : 0;
  EXPECT_EQ(lines.size() - 1, want) << r.out;
  for (size_t k = 1; k < lines.size(); ++k)
    EXPECT_NE(lines[k].find(",test/accuracy,"), std::string::npos) << lines[k];
  auto two = ts("runs export r0001 r0002 --format json");
  ASSERT_EQ(two.exit_code, 0) << two.out;
  auto j = nlohmann::json::parse(two.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["metrics"]["test/accuracy"][0]["value"].get<double>(), 0.001);  // given order
  auto none = ts("runs export --filter \"name = 'nobody'\"");
  EXPECT_EQ(none.exit_code, 3) << none.out;  // not found
}

// Issue 20: a store made read-only (file 444, folder 555) can be listed,
// shown and exported, and is byte-identical afterwards. As root, file modes
// bind nobody, so the readers then run as the unprivileged user 65534.
TEST_F(RunsQueryCliTest, AReadOnlyStoreIsReadAndLeftByteIdentical) {
  fill(12);
  const auto db = dir_ / "t.db";
  std::filesystem::permissions(db, std::filesystem::perms::owner_read |
                                       std::filesystem::perms::group_read |
                                       std::filesystem::perms::others_read);
  std::filesystem::permissions(
      dir_.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                       std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                       std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  const std::string before = core::sha256_file(db);
  std::vector<std::string> entries_before;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
    entries_before.push_back(e.path().filename());
  const std::string as =
      geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  for (const char* read : {"runs list", "--json runs list", "runs list --columns params.* -f csv",
                           "runs show r0003", "runs export r0003 --format json",
                           "runs export --format csv", "metrics r0005 test/accuracy"}) {
    auto r = ts(read, as);
    EXPECT_EQ(r.exit_code, 0) << read << ": " << r.out;
  }
  EXPECT_EQ(core::sha256_file(db), before);
  std::vector<std::string> entries_after;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
    entries_after.push_back(e.path().filename());
  EXPECT_EQ(entries_after, entries_before);  // no -wal, -shm or journal left
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace trainscope
