// What is particular to the SQLite backend, on real database files: the
// file beside its artifacts, several connections, schema versions and bad
// locations. The contract every backend shares is in conformance_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/query.h"
#include "trainscope/store/registry.h"
#include "trainscope/store/store.h"

namespace trainscope::store {
using core::csv_field;
using core::Error;
using core::ErrorKind;
using core::escape_for_display;
using core::host_name;
using core::sha256_file;
using core::sha256_hex;

namespace {

using testing::TempDir;

std::unique_ptr<Store> open_at(const std::filesystem::path& p, StoreOptions o = {}) {
  o.uri = "sqlite:" + p.string();
  return Store::open(o);
}

// Runs SQL on the store file at `p` as a damaged or hostile writer would,
// around trainscope (foreign keys unchecked, as sqlite3 leaves them).
void damage(const std::filesystem::path& p, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
}

// What reading a copy of DIR/t.db damaged by SQL says: the message of the
// Error(kStore) `read` throws, or "read without an error".
std::string damaged_read(const std::filesystem::path& dir, const char* sql,
                         const std::function<void(Store&)>& read) {
  std::filesystem::copy_file(dir / "t.db", dir / "d.db",
                             std::filesystem::copy_options::overwrite_existing);
  damage(dir / "d.db", sql);
  try {
    auto store = open_at(dir / "d.db");
    read(*store);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStore);
    return e.what();
  }
  return "read without an error";
}

void write_file(const std::filesystem::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

TEST(SqliteStoreTest, SecondConnectionSeesTheSameRuns) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({.experiment = "exp-a", .name = "first"});
  store->append_metrics(r.uuid, {{"loss", {{1, 2.0, 0.5}}}});
  auto other = open_at(dir / "t.db");
  ASSERT_EQ(other->list_runs().size(), 1u);
  EXPECT_EQ(other->metric(r.uuid, "loss").at(0).value, 0.5);
  EXPECT_EQ(other->describe(), "sqlite:" + (dir / "t.db").string());
}

TEST(SqliteStoreTest, UriSpellingsNameTheSameFile) {
  TempDir dir;
  RunInfo r = open_at(dir / "t.db")->create_run({});
  for (std::string uri : {(dir / "t.db").string(), "sqlite:///" + (dir / "t.db").string()}) {
    StoreOptions o;
    o.uri = uri;
    EXPECT_TRUE(Store::open(o)->find_run(r.uuid).has_value()) << uri;
  }
  EXPECT_EQ(parse_store_uri("sqlite::memory:").location, ":memory:");
  // Everyday-use defect 12: as SQLAlchemy and MLflow read them.
  EXPECT_EQ(parse_store_uri("sqlite:///x.db").location, "x.db");
  EXPECT_EQ(parse_store_uri("sqlite:////abs/x.db").location, "/abs/x.db");
  EXPECT_EQ(parse_store_uri("sqlite:/abs/x.db").location, "/abs/x.db");
  EXPECT_EQ(parse_store_uri("sqlite:rel/x.db").location, "rel/x.db");
  EXPECT_EQ(parse_store_uri("runs/t.db").scheme, "sqlite");
  EXPECT_EQ(parse_store_uri("postgresql://u@h:5432/db").scheme, "postgresql");
  EXPECT_EQ(parse_store_uri("postgresql://u@h:5432/db").location, "u@h:5432/db");
}

TEST(SqliteStoreTest, ArtifactsLiveBesideTheDatabaseFile) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RunInfo r = store->create_run({});
  write_file(dir / "model.bin", "weights");
  ArtifactInfo a = store->add_artifact(r.uuid, dir / "model.bin", "checkpoint", "ckpt/model.bin");
  EXPECT_EQ(a.path, dir / "t-artifacts" / r.uuid / "ckpt/model.bin");
  EXPECT_EQ(sha256_file(a.path), sha256_hex("weights"));
}

TEST(SqliteStoreTest, MemoryStoresArePrivateAndLeaveNothingBehind) {
  StoreOptions o;
  o.uri = "sqlite::memory:";
  std::filesystem::path artifact;
  {
    auto a = Store::open(o);
    auto b = Store::open(o);
    RunInfo r = a->create_run({});
    EXPECT_TRUE(b->list_runs().empty());
    TempDir dir;
    write_file(dir / "f.txt", "x");
    artifact = a->add_artifact(r.uuid, dir / "f.txt", "file").path;
    EXPECT_TRUE(std::filesystem::exists(artifact));
    EXPECT_EQ(a->describe(), "sqlite::memory:");
  }
  EXPECT_FALSE(std::filesystem::exists(artifact.parent_path()));
}

// Defect A: the reserve beside the store is padded only when it is a regular
// file: a FIFO there is not waited on, a symbolic link not followed.
TEST(SqliteStoreTest, AReserveThatIsNoRegularFileIsLeftAlone) {
  TempDir dir;
  namespace fs = std::filesystem;
  ASSERT_EQ(::mkfifo((dir / "f.db-reserve").c_str(), 0644), 0);
  {
    auto store = open_at(dir / "f.db");  // hung here before the fix
    store->create_run({});
    EXPECT_FALSE(store->release_reserve());
  }
  EXPECT_TRUE(fs::is_fifo(dir / "f.db-reserve"));
  write_file(dir / "target", "mine");
  fs::create_symlink(dir / "target", dir / "l.db-reserve");
  {
    auto store = open_at(dir / "l.db");
    store->create_run({});
    EXPECT_FALSE(store->release_reserve());
  }
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "l.db-reserve")));
  EXPECT_EQ(fs::file_size(dir / "target"), 4u);
  auto plain = open_at(dir / "p.db");
  EXPECT_EQ(fs::file_size(dir / "p.db-reserve"), 512u * 1024);
  EXPECT_TRUE(plain->release_reserve());
  EXPECT_FALSE(fs::exists(dir / "p.db-reserve"));
}

TEST(SqliteStoreTest, StaleRunsAreMarkedKilledOnOpen) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({}).uuid;
  }
  auto age = [&](const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "t.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  };
  // The creating process (this one) is alive and its heartbeat is fresh.
  EXPECT_EQ(open_at(dir / "t.db")->find_run(uuid)->status, RunStatus::kRunning);
  // Silent for long, but its process lives (a paused training): kept.
  age("UPDATE runs SET heartbeat = heartbeat - 3600, start_time = start_time - 7200");
  EXPECT_EQ(open_at(dir / "t.db")->find_run(uuid)->status, RunStatus::kRunning);
  // A run of another host is judged by its heartbeat alone.
  age("UPDATE runs SET host = 'other-host'");
  auto store = open_at(dir / "t.db");
  auto r = store->find_run(uuid);
  EXPECT_EQ(r->status, RunStatus::kKilled);
  EXPECT_GT(r->end_time, 0);
}

// Issue 51 (third hunt, D4): a run's config changed in the store (its
// SHA-256 not) is never trained again or built into a model: every reader
// that does so asks verify_config, which refuses it with kStore.
TEST(SqliteStoreTest, AConfigChangedInTheStoreFailsItsRecordedSha256) {
  TempDir dir;
  std::string uuid, bare;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({.config_text = "optimizer: {lr: 0.001}\n"}).uuid;
    bare = store->create_run({}).uuid;
    EXPECT_NO_THROW(verify_config(*store->find_run(uuid)));
    EXPECT_NO_THROW(verify_config(*store->find_run(bare)));  // no config: nothing to check
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "t.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET config_text = 'optimizer: {lr: 0.5}\n'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = open_at(dir / "t.db");
  try {
    verify_config(*store->find_run(uuid));
    ADD_FAILURE() << "a changed config was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStore);
    EXPECT_EQ(std::string(e.what()),
              "the config recorded with run " + core::short_uuid(uuid) +
                  " does not match its recorded SHA-256: it was changed in the store after the "
                  "run recorded it; it cannot be used");
  }
  RunInfo listed = store->list_runs({.uuid_prefix = uuid}).at(0);  // without its config
  EXPECT_NO_THROW(verify_config(listed));
  RunInfo old = *store->find_run(uuid);
  old.config_hash.clear();  // a run recorded before hashes were kept
  EXPECT_NO_THROW(verify_config(old));
}

// Eleventh hunt, A-D5: a point whose stored step was -5 was shown and
// exported; every writer keeps the step rule, so a reader that meets one
// says the store is damaged (exit 5), as for a record.
TEST(SqliteStoreTest, AMetricStepOutsideTheRuleIsADamagedStore) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({}).uuid;
    store->append_metrics(uuid, {{"loss", {{3, 1.0, 0.5}, {4, 2.0, 0.25}}}});
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "t.db").c_str(), &db), SQLITE_OK);
  // The first point's step (its first 8 bytes) -5; the key's last step -5.
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE metric_chunks SET points = CAST(x'FBFFFFFFFFFFFFFF' || "
                         "substr(points, 9) AS BLOB); UPDATE metric_keys SET last_step = -5",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = open_at(dir / "t.db");
  auto message = [](const auto& read) {
    try {
      read();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kStore);
      return std::string(e.what());
    }
    return std::string("read without an error");
  };
  EXPECT_EQ(message([&] { store->metric(uuid, "loss"); }),
            "metric point 0 of a chunk: step -5 is not an integer from 0 to 2^53; the store is "
            "damaged");
  EXPECT_EQ(message([&] { store->metric_summaries(uuid); }),
            "metric 'loss' of run " + core::short_uuid(uuid) +
                ": its last step -5 is not an integer from 0 to 2^53; the store is damaged");
  // Twelfth hunt, A-D1..D3: a count of -5, text in a number's column, a
  // status no run has: each a damaged store, not a key left out, 1970 or a
  // usage error.
  const std::string who = "run " + core::short_uuid(uuid);
  auto plant = [&](const char* sql) {
    store.reset();
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "t.db").c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(raw);
  };
  // Opened and read: the opening reads the runs too.
  auto opened = [&] { store = open_at(dir / "t.db"); };
  plant("UPDATE metric_keys SET last_step = 4, count = -5");
  EXPECT_EQ(message([&] {
              opened();
              store->metric_summaries(uuid);
            }),
            "metric 'loss' of " + who + ": its count is -5; the store is damaged");
  plant(
      "UPDATE metric_keys SET count = 2; UPDATE metric_chunks SET n = 7, points = "
      "CAST(x'0300000000000000' || substr(points, 9) AS BLOB)");
  EXPECT_EQ(message([&] {
              opened();
              store->metric(uuid, "loss");
            }),
            "metric 'loss' of " + who +
                ": its chunks hold 2 points where their rows count 7; the store is damaged");
  plant("UPDATE runs SET start_time = 'yesterday'");
  EXPECT_EQ(message([&] {
              opened();
              store->find_run(uuid);
            }),
            "column runs.start_time holds text where a number belongs; the store is damaged");
  plant("PRAGMA ignore_check_constraints = 1; UPDATE runs SET start_time = 1, status = 'bogus'");
  EXPECT_EQ(message([&] {
              opened();
              store->find_run(uuid);
            }),
            who +
                ": its stored status 'bogus' is none of created, running, finished, failed, "
                "killed, stopped; the store is damaged");
}

// Twenty-fourth hunt, A-D1: a damaged number an expression reads was
// named by the expression's SQL, "column COALESCE(k.last_step, -1) holds
// text ..."; a column is named table.column.
TEST(SqliteStoreTest, ADamagedNumberIsNamedByItsTableAndColumn) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({}).uuid;
    store->append_metrics(uuid, {{"loss", {{1, 1.0, 2.5}, {2, 1.0, 2.0}}}});
  }
  auto message = [&](const char* sql, const std::function<void(Store&)>& read) {
    return damaged_read(dir.path(), sql, read);
  };
  auto whole = [&](Store& s) { s.metric(uuid, "loss"); };
  auto summaries = [&](Store& s) { s.metric_summaries(uuid); };
  const char* text_step = "UPDATE metric_keys SET last_step = 'x'";
  for (const auto& read :
       {std::function<void(Store&)>(whole), std::function<void(Store&)>(summaries)})
    EXPECT_EQ(message(text_step, read),
              "column metric_keys.last_step holds text where a whole number belongs; the store "
              "is damaged");
  EXPECT_EQ(message("UPDATE metric_chunks SET n = 1.5", whole),
            "column metric_chunks.n holds a fraction where a whole number belongs; the store is "
            "damaged");
  EXPECT_EQ(
      message("UPDATE runs SET start_time = 'yesterday'", [&](Store& s) { s.find_run(uuid); }),
      "column runs.start_time holds text where a number belongs; the store is damaged");
}

// Twenty-second hunt, A-D4: energy/total_kwh planted at -5 was the
// checklist's "Energy consumption: -5 kWh", and report throughput's,
// resources' and card's figure. Import refused such a value; a store read
// now refuses it too, in the points and in the key's summary.
TEST(SqliteStoreTest, AnOwnSeriesValueItsWriterNeverRecordsIsADamagedStore) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({}).uuid;
    store->append_metrics(uuid, {{"energy/total_kwh", {{1, 1.0, 0.5}}}});
    store->append_metrics(uuid, {{"exit_code", {{0, 1.0, 0}}}});
  }
  const std::string who = "run " + core::short_uuid(uuid) + ": metric ";
  const std::string never =
      "which trainscope's resource sampler never records (a count, rate or amount: finite and "
      "not negative)";
  auto message = [&](const char* sql, const std::function<void(Store&)>& read) {
    return damaged_read(dir.path(), sql, read);
  };
  // Step 1, wall 1.0, value -5 (little-endian), and a summary to match.
  const char* minus_five =
      "UPDATE metric_chunks SET points = x'0100000000000000000000000000F03F00000000000014C0' "
      "WHERE key_id = (SELECT id FROM metric_keys WHERE key = 'energy/total_kwh'); "
      "UPDATE metric_keys SET last_value = -5, min_value = -5, max_value = -5 WHERE key = "
      "'energy/total_kwh'";
  EXPECT_EQ(message(minus_five, [&](Store& s) { s.metric(uuid, "energy/total_kwh"); }),
            who + "'energy/total_kwh' is -5, " + never + " at step 1; the store is damaged");
  EXPECT_EQ(message(minus_five, [&](Store& s) { s.metric_summaries(uuid); }),
            who + "'energy/total_kwh' is -5, " + never + " in its summary; the store is damaged");
  EXPECT_EQ(message("UPDATE metric_keys SET last_value = 300, max_value = 300 WHERE key = "
                    "'exit_code'",
                    [&](Store& s) { s.run_fields({uuid}, false, false, true); }),
            who +
                "'exit_code' is 300, which no program exits with (0 to 255) in its summary; the "
                "store is damaged");
  auto store = open_at(dir / "t.db");  // undamaged: read as written
  EXPECT_EQ(store->metric(uuid, "energy/total_kwh").back().value, 0.5);
}

// Eighteenth hunt, A-D10 and A-D11: chunks whose order was swapped, and a
// key's row whose last, min and max contradict each other (or are NULL),
// were read as they were: stats said one last value, runs show another.
TEST(SqliteStoreTest, ChunksOutOfOrderAndContradictorySummariesAreADamagedStore) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({}).uuid;
    store->append_metrics(uuid, {{"loss", {{1, 1.0, 2.5}, {2, 1.0, 2.0}}}});
    store->append_metrics(uuid, {{"loss", {{3, 2.0, 0.5}, {4, 2.0, 0.25}}}});
    store->append_metrics(uuid, {{"acc", {{1, 1.0, 0.5}, {2, 1.0, std::nan("")}}}});
  }
  const std::string who = "metric 'loss' of run " + core::short_uuid(uuid);
  auto message = [&](const char* sql, const std::function<void(Store&)>& read) {
    return damaged_read(dir.path(), sql, read);
  };
  auto whole = [&](Store& s) { s.metric(uuid, "loss"); };
  auto from = [&](Store& s) { s.metric_from(uuid, "loss", 1); };
  auto scan = [&](Store& s) { s.scan_metric(uuid, "loss", 0, [](const auto&) { return true; }); };
  auto summaries = [&](Store& s) { s.metric_summaries(uuid); };
  auto fields = [&](Store& s) { s.run_fields({uuid}, false, false, true); };
  const char* swap =  // seq 0 and 1 swapped, by way of 100 and 101 (seq is unique)
      "UPDATE metric_chunks SET seq = seq + 100 WHERE key_id = (SELECT id FROM metric_keys WHERE "
      "key = 'loss'); UPDATE metric_chunks SET seq = 101 - seq WHERE seq >= 100";
  const std::string swapped = who +
                              ": its chunks end at step 2 (2) where its row records the last "
                              "point at step 4 (0.25); the store is damaged";
  for (const auto& read : {std::function<void(Store&)>(whole), std::function<void(Store&)>(from),
                           std::function<void(Store&)>(scan)})
    EXPECT_EQ(message(swap, read), swapped);
  // Twenty-second hunt, A-D1: the last chunk copied after itself (its last
  // point is the row's) was listed twice by `metrics` while the key's
  // count and every summary said 4.
  const char* copied =
      "INSERT INTO metric_chunks SELECT key_id, seq + 1, n, first_step, last_step, points FROM "
      "metric_chunks WHERE key_id = (SELECT id FROM metric_keys WHERE key = 'loss') AND seq = 1";
  for (const auto& read : {std::function<void(Store&)>(whole), std::function<void(Store&)>(from),
                           std::function<void(Store&)>(scan)})
    EXPECT_EQ(message(copied, read),
              who + ": its chunks count 6 points where its row counts 4; the store is damaged");
  const std::string contradict = who +
                                 ": its last {}, min {} and max {} contradict each other; "
                                 "the store is damaged";
  for (const auto& read :
       {std::function<void(Store&)>(summaries), std::function<void(Store&)>(fields)}) {
    EXPECT_EQ(message("UPDATE metric_keys SET last_value = -0.123 WHERE key = 'loss'", read),
              fmt::format(fmt::runtime(contradict), -0.123, 0.25, 2.5));
    EXPECT_EQ(
        message("UPDATE metric_keys SET min_value = 9, max_value = 1 WHERE key = 'loss'", read),
        fmt::format(fmt::runtime(contradict), 0.25, 9, 1));
    EXPECT_EQ(message("UPDATE metric_keys SET max_value = NULL WHERE key = 'loss'", read),
              fmt::format(fmt::runtime(contradict), 0.25, 0.25, "nan"));
    EXPECT_EQ(message("UPDATE metric_keys SET last_step = NULL WHERE key = 'loss'", read),
              who + ": its last step -1 is not an integer from 0 to 2^53; the store is damaged");
  }
  // Undamaged, a NaN last point (stored as NULL) reads as it was written.
  auto store = open_at(dir / "t.db");
  EXPECT_TRUE(std::isnan(store->metric(uuid, "acc").back().value));
  EXPECT_EQ(store->metric_summaries(uuid).size(), 2u);
  EXPECT_EQ(store->metric(uuid, "loss").back().value, 0.25);
}

// Twentieth hunt, A-D1: a stored UUID holding ESC ] ... BEL and a line
// break was written raw by runs show, diff, env diff and runs view.
TEST(SqliteStoreTest, AStoredUuidThatIsNoUuidIsADamagedStore) {
  TempDir dir;
  {
    auto store = open_at(dir / "t.db");
    store->create_run({.name = "a"});
  }
  damage(dir / "t.db", "UPDATE runs SET uuid = 'ab' || char(27) || ']0;pwn' || char(7) || 'cd'");
  try {
    open_at(dir / "t.db")->list_runs({});
    ADD_FAILURE() << "listed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStore);
    EXPECT_EQ(std::string(e.what()),
              "a run's stored UUID 'ab\\x1b]0;pwn\\x07cd' is not a UUID; the store is damaged");
  }
}

// Twenty-fifth hunt, A-D4: a UUID stored in upper case was listed, while
// no reference reached it (the resolver looks up lower case), and a
// lower-case twin opened in its place.
TEST(SqliteStoreTest, AStoredUuidInUpperCaseIsADamagedStore) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({.name = "a"}).uuid;
  }
  damage(dir / "t.db", "UPDATE runs SET uuid = upper(uuid)");
  std::string upper = uuid;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_NE(upper, uuid);  // a UUID of digits alone would not test it
  try {
    open_at(dir / "t.db")->list_runs({});
    ADD_FAILURE() << "listed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStore);
    EXPECT_EQ(std::string(e.what()),
              "a run's stored UUID '" + upper + "' is not a UUID; the store is damaged");
  }
}

// Twenty-seventh hunt, B-D1: a stored artifact hash that was no SHA-256
// (text, or the right one in upper case) was shown as it was, and the
// intact file then blamed for not matching it.
TEST(SqliteStoreTest, AStoredArtifactHashThatIsNoSha256IsADamagedStore) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    uuid = store->create_run({.name = "a"}).uuid;
    std::ofstream(dir / "f.txt") << "x";
    store->add_artifact(uuid, dir / "f.txt", "file");
  }
  EXPECT_EQ(open_at(dir / "t.db")->artifacts(uuid).size(), 1u);
  for (const char* hash : {"upper(sha256)", "'not-a-hash<b>'", "''"}) {
    damage(dir / "t.db", (std::string("UPDATE artifacts SET sha256 = ") + hash).c_str());
    try {
      open_at(dir / "t.db")->artifacts(uuid);
      ADD_FAILURE() << hash << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kStore);
      EXPECT_NE(std::string(e.what()).find("artifact 'f.txt' of run " + uuid.substr(0, 8) +
                                           ": its stored SHA-256 '"),
                std::string::npos)
          << e.what();
    }
  }
}

// Twenty-first hunt, A-D5: with a row of schema_migrations deleted, a
// writer said "store 'sm.db': ' (-v shows the full message)": the failed
// migration's message began with its SQL.
TEST(SqliteStoreTest, AMigrationListedAsNotAppliedWhoseTablesAreThereIsADamagedStore) {
  TempDir dir;
  open_at(dir / "t.db")->create_run({});
  damage(dir / "t.db",
         "DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM "
         "schema_migrations)");
  try {
    open_at(dir / "t.db");
    ADD_FAILURE() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kStore);
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("migrating its schema to version "), std::string::npos) << what;
    EXPECT_NE(what.find("the store is damaged, and was not changed"), std::string::npos) << what;
  }
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
  try {
    Store::open(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("known: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sqlite:"), std::string::npos) << e.what();
  }
}

// Issue 51, thirteenth hunt (A-D5): runs a damaged store made their own
// parent, or each other's, crashed `runs delete --with-children` (a
// recursion without end). Each run of the family is deleted once.
TEST(SqliteStoreTest, DeletingAFamilyWhoseParentsFormACycleDeletesEachOnce) {
  TempDir dir;
  std::string a, b, c, other;
  {
    auto store = open_at(dir / "t.db");
    a = store->create_run({.name = "a"}).uuid;
    b = store->create_run({.name = "b", .parent_uuid = a}).uuid;
    c = store->create_run({.name = "c", .parent_uuid = b}).uuid;
    other = store->create_run({.name = "self"}).uuid;
  }
  damage(dir / "t.db",
         "UPDATE runs SET parent_id = (SELECT id FROM runs WHERE name = 'c') "
         "WHERE name = 'a'; UPDATE runs SET parent_id = id WHERE name = 'self'");
  auto store = open_at(dir / "t.db");
  store->delete_run(other, Store::ChildRuns::kDelete);
  EXPECT_FALSE(store->find_run(other).has_value());
  store->delete_run(b, Store::ChildRuns::kDelete);
  EXPECT_TRUE(store->list_runs().empty());
}

// Sixteenth hunt, 16B-D3: with parents planted in a cycle, the nested
// table showed a study as its own child's child and a run as its own
// child. Each run is shown once; a run in a cycle stands alone; a run
// that is its own parent has no parent and is none of its children.
TEST(SqliteStoreTest, AParentCycleShowsEachRunOnceAndNoRunAsItsOwnChild) {
  TempDir dir;
  std::string a, b, self;
  {
    auto store = open_at(dir / "t.db");
    a = store->create_run({.name = "a"}).uuid;
    b = store->create_run({.name = "b", .parent_uuid = a}).uuid;
    store->create_run({.name = "under-b", .parent_uuid = b});
    self = store->create_run({.name = "self"}).uuid;
    store->create_run({.name = "under-self", .parent_uuid = self});
    // A chain of runs (start_run(parent=) can make one): under its head.
    std::string up = store->create_run({.name = "c0"}).uuid;
    for (const char* name : {"c1", "c2"})
      up = store->create_run({.name = name, .parent_uuid = up}).uuid;
  }
  damage(dir / "t.db",
         "UPDATE runs SET parent_id = (SELECT id FROM runs WHERE name = 'b') "
         "WHERE name = 'a'; UPDATE runs SET parent_id = id WHERE name = 'self'");
  auto store = open_at(dir / "t.db");
  const auto kids = store->list_runs({.parent_uuid = self});
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(kids[0].name, "under-self");
  RunQuery q;
  q.nest = true;
  q.sort = "name";
  const RunQueryResult r = query_runs(*store, q);
  std::vector<std::string> shown;
  for (const auto& row : r.rows) shown.push_back(row.info.name);
  std::sort(shown.begin(), shown.end());
  EXPECT_EQ(shown, (std::vector<std::string>{"a", "b", "c0", "c1", "c2", "self", "under-b",
                                             "under-self"}));
  std::map<std::string, std::vector<std::string>> nested;
  for (const auto& g : r.groups)
    for (size_t c : g.children) nested[r.rows[g.top].info.name].push_back(r.rows[c].info.name);
  EXPECT_EQ(nested, (std::map<std::string, std::vector<std::string>>{{"c0", {"c1", "c2"}},
                                                                     {"self", {"under-self"}}}));
}

// Seventeenth hunt, 17A-D2: a run whose experiment_id names no experiment
// (foreign keys bypassed) was left out of every listing, and `store copy`
// said it copied every run while it left it behind. It is a damaged
// store, exit 5, to every reader.
TEST(SqliteStoreTest, ARunOfNoStoredExperimentIsADamagedStore) {
  TempDir dir;
  std::string uuid;
  {
    auto store = open_at(dir / "t.db");
    store->create_run({.name = "kept"});
    uuid = store->create_run({.name = "lost"}).uuid;
  }
  damage(dir / "t.db",
         "PRAGMA foreign_keys = OFF; "
         "UPDATE runs SET experiment_id = 999 WHERE name = 'lost'");
  const std::string uri = "sqlite:" + (dir / "t.db").string();
  auto reader = Store::open({.uri = uri, .read_only = true});
  for (auto read : std::vector<std::function<void()>>{
           [&] { open_at(dir / "t.db"); },  // a writer's reaper lists the running runs
           [&] { reader->list_runs(); }, [&] { reader->find_run(uuid); }}) {
    try {
      read();
      ADD_FAILURE() << "the run was read, or left out";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kStore);
      EXPECT_NE(std::string(e.what()).find("its stored experiment is none"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace trainscope::store
