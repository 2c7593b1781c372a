// A capability added in the test suite, without a line in train/, store/
// or cli/: its config key parses and is listed, the Trainer attaches its
// observer, its records reach the store (SQLite here; the store's records
// are conformance-tested on PostgreSQL too), and `trainscope runs show`
// lists them.
#include "capability/sign_flips.h"

#include <gtest/gtest.h>

#include <set>

#include "support/test_util.h"
#include "trainscope/config/config.h"
#include "trainscope/train/trainer.h"

namespace {

namespace ts = trainscope;
namespace tst = trainscope::testing;

TEST(CapabilityTest, AUnitOfTheTestSuiteGetsConfigObserverRecordsAndRunsShow) {
  bool listed = false;
  for (const auto& [key, help] : ts::config::config_keys()) listed |= key == "sign_flips.every";
  EXPECT_TRUE(listed) << "config keys lists the unit's key";
  EXPECT_THROW(ts::config::parse_config("sign_flips: {every: -1}\n", {}), ts::core::Error);

  tst::TempDir dir;
  const std::string uri = "sqlite:" + (dir / "caps.db").string();
  std::shared_ptr<ts::store::Store> store = ts::store::Store::open({.uri = uri});
  auto config = ts::config::parse_config(
      "data: {dataset: synthetic, synthetic: {size: 512}}\nmodel: {name: mlp, hidden: 32}\n"
      "train: {epochs: 1, batch_size: 64}\nsign_flips: {every: 2}\n",
      {"monitor.interval_s=0"});
  EXPECT_NE(ts::config::to_yaml(config).find("sign_flips:\n  every: 2"), std::string::npos)
      << ts::config::to_yaml(config);
  ts::train::TrainOptions options;
  options.name = "flips";
  options.record_environment = false;
  ts::train::Trainer trainer(config, store, options);
  const auto result = trainer.run();
  ASSERT_EQ(result.steps, 8);

  auto records = store->records(result.run_uuid, sign_flips::kKind);
  ASSERT_FALSE(records.empty());
  std::set<int64_t> steps;
  for (const auto& r : records) {
    steps.insert(r.step);
    const double f = sign_flips::read_fraction(r);
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
  }
  EXPECT_EQ(steps, (std::set<int64_t>{2, 4, 6, 8}));
  // Adam moves every weight at the first steps: some sign changed.
  EXPECT_GT(sign_flips::read_fraction(records.front()), 0.0);

  auto show = tst::run_command(std::string(TS_CLI_BIN) + " --store " + uri + " runs show flips");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("sign_flips"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find(std::to_string(records.size())), std::string::npos) << show.out;
}

}  // namespace
