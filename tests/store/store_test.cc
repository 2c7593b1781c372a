// Integration tests of the SQLite store on real database files.
#include "trainscope/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope {
namespace {

using testing::TempDir;

std::unique_ptr<Store> open_at(const std::filesystem::path& p, StoreOptions o = {}) {
  o.uri = "sqlite:" + p.string();
  return Store::open(o);
}

void write_file(const std::filesystem::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

TEST(StoreTest, CreatesSchemaOnFirstOpen) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  EXPECT_EQ(store->schema_version(), Store::latest_schema_version());
  EXPECT_TRUE(store->list_runs().empty());
}

TEST(StoreTest, RunRoundTrip) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  NewRun nr;
  nr.experiment = "exp-a";
  nr.name = "first";
  nr.command_line = "trainscope train demo.yaml";
  nr.config_text = "lr: 0.1\n";
  RunInfo parent = store->create_run(nr);
  nr.name = "child";
  nr.parent_uuid = parent.uuid;
  RunInfo child = store->create_run(nr);

  auto got = store->find_run(child.uuid);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->experiment, "exp-a");
  EXPECT_EQ(got->name, "child");
  EXPECT_EQ(got->status, RunStatus::kRunning);
  EXPECT_EQ(got->parent_uuid, parent.uuid);
  EXPECT_EQ(got->command_line, "trainscope train demo.yaml");
  EXPECT_EQ(got->config_text, "lr: 0.1\n");
  EXPECT_EQ(got->config_hash, sha256_hex("lr: 0.1\n"));
  EXPECT_EQ(got->host, host_name());
  EXPECT_EQ(got->pid, getpid());
  EXPECT_GT(got->start_time, 1.7e9);
  EXPECT_EQ(got->end_time, 0);

  store->set_status(child.uuid, RunStatus::kFinished);
  got = store->find_run(child.uuid);
  EXPECT_EQ(got->status, RunStatus::kFinished);
  EXPECT_GE(got->end_time, got->start_time);

  RunFilter f;
  f.parent_uuid = parent.uuid;
  ASSERT_EQ(store->list_runs(f).size(), 1u);
  f = {};
  f.status = RunStatus::kFinished;
  ASSERT_EQ(store->list_runs(f).size(), 1u);
  f = {};
  f.experiment = "nope";
  EXPECT_TRUE(store->list_runs(f).empty());
  EXPECT_EQ(store->list_experiments(), std::vector<std::string>{"exp-a"});

  // A second connection sees the same data.
  auto other = open_at(dir / "t.db");
  EXPECT_EQ(other->list_runs().size(), 2u);
}

TEST(StoreTest, ParamsAreImmutableTagsAreNot) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({});
  store->set_param(r.uuid, "lr", "0.1");
  store->set_param(r.uuid, "lr", "0.1");  // same value: fine
  try {
    store->set_param(r.uuid, "lr", "0.2");
    FAIL() << "changing a param must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find("immutable"), std::string::npos) << e.what();
  }
  // A batch with one conflicting value changes nothing.
  EXPECT_THROW(store->set_params(r.uuid, {{"batch", "64"}, {"lr", "0.3"}}), Error);
  EXPECT_EQ(store->params(r.uuid), (std::map<std::string, std::string>{{"lr", "0.1"}}));

  store->set_tag(r.uuid, "note", "a");
  store->set_tag(r.uuid, "note", "b");
  store->set_tag(r.uuid, "x", "1");
  store->delete_tag(r.uuid, "x");
  EXPECT_EQ(store->tags(r.uuid), (std::map<std::string, std::string>{{"note", "b"}}));
}

TEST(StoreTest, OddKeysRoundTrip) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({});
  const std::string odd = "a,b \"q\"\n\t\\ üñï/%_'; DROP TABLE runs; --";
  store->set_param(r.uuid, odd, odd);
  store->set_tag(r.uuid, odd, odd);
  store->append_metrics(r.id, {{odd, {{1, 2.0, 3.0}}}});
  EXPECT_EQ(store->params(r.uuid).at(odd), odd);
  EXPECT_EQ(store->tags(r.uuid).at(odd), odd);
  ASSERT_EQ(store->metric(r.uuid, odd).size(), 1u);
  EXPECT_EQ(store->metric_summaries(r.uuid).at(0).key, odd);
  EXPECT_EQ(escape_for_display("a\nb\t\\"), "a\\nb\\t\\\\");
  EXPECT_EQ(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
}

TEST(StoreTest, MetricsKeepNonFiniteValuesBitForBit) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({});
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  const double payload_nan = std::bit_cast<double>(uint64_t{0x7ff8000000000123});
  const double neg_nan = -qnan;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<MetricPoint> pts = {{0, 1.0, 0.5},  {1, 1.1, qnan}, {2, 1.2, inf},
                                  {3, 1.3, -inf}, {4, 1.4, payload_nan}, {5, 1.5, neg_nan},
                                  {6, 1.6, -0.0}, {2, 1.7, 7.0}};  // steps need not increase
  store->append_metrics(r.id, {{"loss", pts}});
  auto back = store->metric(r.uuid, "loss");
  ASSERT_EQ(back.size(), pts.size());
  for (size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(back[i].step, pts[i].step);
    EXPECT_EQ(std::bit_cast<uint64_t>(back[i].value), std::bit_cast<uint64_t>(pts[i].value)) << i;
    EXPECT_EQ(back[i].wall_time, pts[i].wall_time);
  }
  auto s = store->metric_summaries(r.uuid).at(0);
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.last_step, 2);
  EXPECT_EQ(s.last_value, 7.0);
  EXPECT_EQ(s.min, -0.0);
  EXPECT_EQ(s.max, 7.0);
}

TEST(StoreTest, MetricsAppendAcrossBatchesAndLargeSeries) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({});
  std::vector<MetricPoint> big;
  for (int i = 0; i < 20000; ++i) big.push_back({i, 100.0 + i, std::sin(i)});
  store->append_metrics(r.id, {{"a", big}, {"b", {{0, 1, 1}}}});
  store->append_metrics(r.id, {{"a", {{20000, 1, -5}}}});
  auto back = store->metric(r.uuid, "a");
  ASSERT_EQ(back.size(), 20001u);
  for (int i = 0; i < 20000; ++i) ASSERT_EQ(back[i].value, std::sin(i));
  EXPECT_EQ(back.back().value, -5);
  EXPECT_EQ(store->metric_summaries(r.uuid).at(0).min, -5);
  EXPECT_TRUE(store->metric(r.uuid, "missing").empty());
}

TEST(StoreTest, ResolveRunByPrefixNameAndAmbiguity) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  NewRun nr;
  nr.name = "alpha";
  RunInfo a = store->create_run(nr);
  nr.name = "beta";
  RunInfo b = store->create_run(nr);
  RunInfo b2 = store->create_run(nr);

  EXPECT_EQ(store->resolve_run(a.uuid).uuid, a.uuid);
  EXPECT_EQ(store->resolve_run("alpha").uuid, a.uuid);
  // The shortest prefix that tells a apart from the others.
  size_t n = 1;
  auto unique_at = [&](size_t len) {
    return a.uuid.substr(0, len) != b.uuid.substr(0, len) &&
           a.uuid.substr(0, len) != b2.uuid.substr(0, len);
  };
  while (!unique_at(n)) ++n;
  EXPECT_EQ(store->resolve_run(a.uuid.substr(0, n)).uuid, a.uuid);
  try {
    store->resolve_run("beta");
    FAIL() << "a name shared by two runs is ambiguous";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find(b.uuid.substr(0, 8)), std::string::npos) << e.what();
  }
  try {
    store->resolve_run("zzz-unknown");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

TEST(StoreTest, ArtifactsAreCopiedWithHashAndDeletedWithTheRun) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({});
  write_file(dir / "model.bin", "weights");
  ArtifactInfo a = store->add_artifact(r.uuid, dir / "model.bin", "checkpoint", "ckpt/model.bin");
  EXPECT_EQ(a.sha256, sha256_hex("weights"));
  EXPECT_EQ(a.size, 7);
  EXPECT_TRUE(std::filesystem::exists(a.path));
  EXPECT_EQ(a.path, dir / "t-artifacts" / r.uuid / "ckpt/model.bin");
  auto list = store->artifacts(r.uuid);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].kind, "checkpoint");
  EXPECT_EQ(sha256_file(list[0].path), a.sha256);
  // Same content again: fine. Different content under the same name: refused.
  EXPECT_NO_THROW(store->add_artifact(r.uuid, dir / "model.bin", "checkpoint", "ckpt/model.bin"));
  write_file(dir / "model2.bin", "other");
  EXPECT_THROW(store->add_artifact(r.uuid, dir / "model2.bin", "checkpoint", "ckpt/model.bin"),
               Error);
  EXPECT_EQ(sha256_file(a.path), sha256_hex("weights"));
  EXPECT_THROW(store->add_artifact(r.uuid, dir / "model.bin", "x", "../escape"), Error);
  EXPECT_THROW(store->add_artifact(r.uuid, dir / "missing.bin", "x"), Error);

  store->set_param(r.uuid, "k", "v");
  store->append_metrics(r.id, {{"m", {{0, 0, 1}}}});
  store->delete_run(r.uuid);
  EXPECT_FALSE(store->find_run(r.uuid).has_value());
  EXPECT_FALSE(std::filesystem::exists(a.path));
  EXPECT_TRUE(store->params(r.uuid).empty());
  EXPECT_TRUE(store->metric(r.uuid, "m").empty());
}

TEST(StoreTest, StaleRunsAreMarkedKilledOnOpen) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({}).uuid;
  }
  // The creating process (this one) is alive and its heartbeat is fresh.
  EXPECT_EQ(open_at(dir / "t.db")->find_run(uuid)->status, RunStatus::kRunning);
  // Make the heartbeat old, as if the run went silent.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "t.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET heartbeat = heartbeat - 31", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open_at(dir / "t.db");
  auto r = store->find_run(uuid);
  EXPECT_EQ(r->status, RunStatus::kKilled);
  EXPECT_GT(r->end_time, 0);
}

TEST(StoreBadInputTest, NotADatabase) {
  TempDir dir;
  write_file(dir / "junk.db", std::string(4096, 'x'));
  std::string before = sha256_file(dir / "junk.db");
  try {
    open_at(dir / "junk.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a SQLite database"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  EXPECT_EQ(sha256_file(dir / "junk.db"), before);
}

TEST(StoreBadInputTest, ForeignSqliteDatabaseIsRefused) {
  TempDir dir;
  sqlite3* db = nullptr;
  sqlite3_open((dir / "other.db").c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_THROW(open_at(dir / "other.db"), Error);
}

TEST(StoreBadInputTest, NewerSchemaIsRefusedAndNotModified) {
  TempDir dir;
  {
    auto store = open_at(dir / "t.db");
    store->create_run({});
  }
  {
    sqlite3* db = nullptr;
    sqlite3_open((dir / "t.db").c_str(), &db);
    ASSERT_EQ(sqlite3_exec(db,
                           "PRAGMA journal_mode = DELETE; INSERT INTO schema_migrations VALUES "
                           "(999, 'from the future', 0)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  std::string before = sha256_file(dir / "t.db");
  try {
    open_at(dir / "t.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sha256_file(dir / "t.db"), before);
  EXPECT_FALSE(std::filesystem::exists(dir / "t.db-wal"));
}

TEST(StoreBadInputTest, UnwritableLocations) {
  TempDir dir;
  write_file(dir / "afile", "x");
  // A path below a regular file cannot be created, even by root.
  try {
    open_at(dir / "afile" / "t.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a folder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_at(dir / "missing" / "t.db"), Error);
  EXPECT_THROW(open_at(dir.path()), Error);  // a folder
  StoreOptions o;
  o.uri = "mysql://x";
  EXPECT_THROW(Store::open(o), Error);
}

TEST(StoreBadInputTest, UnknownRunUuid) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  EXPECT_THROW(store->set_param("00000000-0000-4000-8000-000000000000", "k", "v"), Error);
  EXPECT_THROW(store->set_status("00000000-0000-4000-8000-000000000000", RunStatus::kFinished),
               Error);
}

}  // namespace
}  // namespace trainscope
