// A store written by schema version 1 (tests/data/schema_v1.db) migrates to
// the current schema with its data intact.
#include <gtest/gtest.h>

#include <fstream>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/store.h"

namespace trainscope::store {
using core::Error;
using core::sha256_hex;

namespace {

TEST(MigrationTest, SchemaV1MigratesWithDataIntact) {
  testing::TempDir dir;
  std::filesystem::copy_file(TS_TEST_DATA_DIR "/schema_v1.db", dir / "old.db");
  StoreOptions o;
  o.uri = "sqlite:" + (dir / "old.db").string();
  o.read_only = true;
  EXPECT_THROW(Store::open(o), Error) << "read-only open must refuse an unmigrated store";

  o.read_only = false;
  auto store = Store::open(o);
  EXPECT_EQ(store->schema_version(), store->latest_schema_version());
  ASSERT_GE(store->latest_schema_version(), 2);

  RunInfo old = store->resolve_run("old-run");
  EXPECT_EQ(old.uuid, "11111111-2222-4333-8444-555555555555");
  EXPECT_EQ(old.status, RunStatus::kFinished);
  EXPECT_EQ(store->params(old.uuid).at("lr"), "0.1");
  EXPECT_EQ(store->tags(old.uuid).at("note"), "from schema v1");
  auto loss = store->metric(old.uuid, "loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[0].value, 2.0);
  EXPECT_EQ(loss[2].step, 2);
  EXPECT_EQ(loss[2].value, 0.5);

  // The v1 run left "running" with an old heartbeat was reaped on open.
  EXPECT_EQ(store->resolve_run("crashed-run").status, RunStatus::kKilled);

  // Tables added by later migrations work.
  std::ofstream(dir / "a.txt") << "hello";
  EXPECT_EQ(store->add_artifact(old.uuid, dir / "a.txt", "note").sha256, sha256_hex("hello"));
  store->append_metrics(old.uuid, {{"loss", {{3, 0, 0.25}}}});
  EXPECT_EQ(store->metric(old.uuid, "loss").size(), 4u);

  // Reopening does not migrate again.
  store.reset();
  o.read_only = true;
  auto reopened = Store::open(o);
  EXPECT_EQ(reopened->schema_version(), reopened->latest_schema_version());
}

}  // namespace
}  // namespace trainscope::store
