// Stores written by earlier schemas migrate to the current one with their
// data intact: schema version 1 (tests/data/schema_v1.db), and schema 5
// (tests/data/schema_v5.db, written by trainscope before capabilities kept
// their records in one table: two trainings with probes, one of them
// exploding into alerts, and a profiled one).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <fstream>
#include <map>

#include "support/postgres_test.h"
#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/fingerprint/records.h"
#include "trainscope/probes/records.h"
#include "trainscope/profile/records.h"
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

// The rows of schema 5's per-kind tables, read straight from the file.
class OldTables {
 public:
  explicit OldTables(const std::filesystem::path& file) {
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  }
  ~OldTables() { sqlite3_close(db_); }
  // Each row of `sql` (with ? bound to `uuid`'s run id) as text columns.
  std::vector<std::vector<std::string>> rows(const std::string& sql, const std::string& uuid) {
    sqlite3_stmt* s = nullptr;
    std::string full = sql;
    if (auto at = full.find('?'); at != std::string::npos)
      full.replace(at, 1, "(SELECT id FROM runs WHERE uuid = '" + uuid + "')");
    EXPECT_EQ(sqlite3_prepare_v2(db_, full.c_str(), -1, &s, nullptr), SQLITE_OK) << full;
    std::vector<std::vector<std::string>> out;
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        if (sqlite3_column_type(s, c) == SQLITE_FLOAT) {  // every bit, not 15 digits
          row.push_back(fmt::format("{}", sqlite3_column_double(s, c)));
          continue;
        }
        const void* p = sqlite3_column_blob(s, c);
        row.emplace_back(p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(s, c))
                           : std::string());
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

std::string num(double v) { return fmt::format("{}", v); }

void expect_fingerprints_equal(OldTables& old, Store& store, const std::string& uuid) {
  const auto set = fingerprint::read(store, uuid);
  std::vector<std::string> names;
  for (const auto& r :
       old.rows("SELECT name FROM fingerprint_tensors WHERE run_id = ? ORDER BY idx", uuid))
    names.push_back(r[0]);
  EXPECT_EQ(set.names, names);
  const auto steps =
      old.rows("SELECT step, hashes FROM fingerprints WHERE run_id = ? ORDER BY step", uuid);
  ASSERT_EQ(set.steps.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(std::to_string(set.steps[i].step), steps[i][0]);
    ASSERT_EQ(set.steps[i].hashes.size() * 8, steps[i][1].size());
    EXPECT_EQ(std::memcmp(set.steps[i].hashes.data(), steps[i][1].data(), steps[i][1].size()), 0);
    // The codec writes the bytes the migration wrote.
    EXPECT_EQ(fingerprint::step_record(set.steps[i]).payload, steps[i][1]);
  }
  if (!names.empty()) {
    EXPECT_EQ(fingerprint::names_record(names).payload,
              store.records(uuid, fingerprint::kNamesKind).at(0).payload);
  }
}

void expect_profile_equal(OldTables& old, Store& store, const std::string& uuid) {
  std::vector<std::string> got, want;
  for (const auto& c : profile::read_cells(store, uuid))
    got.push_back(fmt::format("{} {} {} {}", c.step, c.layer, c.phase, num(c.us)));
  for (const auto& r : old.rows("SELECT step, layer, phase, us FROM profile_cells WHERE run_id = ? "
                                "ORDER BY step, layer, phase",
                                uuid))
    want.push_back(fmt::format("{} {} {} {}", r[0], r[1], r[2], num(std::stod(r[3]))));
  EXPECT_EQ(got, want);
  std::vector<std::pair<std::string, std::string>> layers;
  for (const auto& r :
       old.rows("SELECT name, info FROM profile_layers WHERE run_id = ? ORDER BY idx", uuid))
    layers.emplace_back(r[0], r[1]);
  EXPECT_EQ(profile::read_layers(store, uuid), layers);
  auto cells = profile::read_cells(store, uuid);
  auto records = store.records(uuid, profile::kStepsKind);
  std::vector<std::string> rewritten;
  for (const auto& r : profile::cell_records(cells)) rewritten.push_back(r.payload);
  std::vector<std::string> stored;
  for (const auto& r : records) stored.push_back(r.payload);
  EXPECT_EQ(rewritten, stored);
}

void expect_probes_equal(OldTables& old, Store& store, const std::string& uuid) {
  const auto hs = probes::read_histograms(store, uuid);
  const auto rows = old.rows(
      "SELECT key, step, low, high, nan, pos_inf, neg_inf, counts FROM "
      "histograms WHERE run_id = ? ORDER BY key, step",
      uuid);
  ASSERT_EQ(hs.size(), rows.size());
  for (size_t i = 0; i < hs.size(); ++i) {
    const auto& h = hs[i].histogram;
    EXPECT_EQ(hs[i].key, rows[i][0]);
    EXPECT_EQ(std::to_string(hs[i].step), rows[i][1]);
    EXPECT_EQ(num(h.low), num(std::stod(rows[i][2])));
    EXPECT_EQ(num(h.high), num(std::stod(rows[i][3])));
    EXPECT_EQ(std::to_string(h.nan) + std::to_string(h.pos_inf) + std::to_string(h.neg_inf),
              rows[i][4] + rows[i][5] + rows[i][6]);
    int64_t total = 0;
    for (auto c : h.counts) total += c;
    EXPECT_GT(total + h.nan + h.pos_inf + h.neg_inf, 0);
    // The codec writes the bytes the migration wrote, then the sums that
    // records have kept since (a migrated one has none: read as 0).
    for (const auto& rec : store.records(uuid, probes::kHistogramsKind, hs[i].key))
      if (rec.step == hs[i].step) {
        EXPECT_EQ(probes::histogram_record(hs[i]).payload, rec.payload + std::string(16, '\0'));
      }
  }
  std::vector<std::string> got, want;
  for (const auto& e : probes::read_events(store, uuid))
    got.push_back(fmt::format("{}|{}|{}|{}|{}", e.step, e.kind, e.name, e.source, e.message));
  for (const auto& r : old.rows("SELECT step, kind, name, source, message FROM run_events "
                                "WHERE run_id = ? ORDER BY id",
                                uuid))
    want.push_back(fmt::format("{}|{}|{}|{}|{}", r[0], r[1], r[2], r[3], r[4]));
  EXPECT_EQ(got, want);
}

TEST(MigrationTest, SchemaV5PerKindTablesBecomeRecordsThatReadBackEqual) {
  testing::TempDir dir;
  const auto original = std::filesystem::path(TS_TEST_DATA_DIR) / "schema_v5.db";
  std::filesystem::copy_file(original, dir / "v5.db");
  auto store = Store::open({.uri = "sqlite:" + (dir / "v5.db").string()});
  EXPECT_EQ(store->schema_version(), store->latest_schema_version());
  OldTables old(original);
  const auto runs = store->list_runs({});
  ASSERT_EQ(runs.size(), 3u);
  std::map<std::string, int64_t> kinds_seen;
  for (const auto& r : runs) {
    SCOPED_TRACE(r.name);
    expect_fingerprints_equal(old, *store, r.uuid);
    expect_profile_equal(old, *store, r.uuid);
    expect_probes_equal(old, *store, r.uuid);
    for (const auto& [kind, n] : store->record_kinds(r.uuid)) kinds_seen[kind] += n;
  }
  // Every old table had rows, so every kind is there.
  EXPECT_EQ(kinds_seen.size(), 6u);
  EXPECT_EQ(kinds_seen["events"], 2);
  EXPECT_EQ(probes::read_events(*store, store->resolve_run("exploding").uuid).at(0).name,
            "lr_too_high");
  // The old tables are gone.
  OldTables migrated(dir / "v5.db");
  EXPECT_TRUE(
      migrated.rows("SELECT name FROM sqlite_master WHERE name = 'histograms'", "").empty());
  EXPECT_EQ(migrated.rows("SELECT name FROM sqlite_master WHERE name = 'records'", "").size(), 1u);
}

#ifdef TS_WITH_POSTGRES
// Lines of a query on database `db` of the test server, through psql.
std::vector<std::string> pg_lines(const std::string& db, const std::string& sql) {
  const auto r = testing::run_command("python3 " TS_PG_SERVER " psql " +
                                      testing::shell_quote(testing::postgres_dir().string()) + " " +
                                      db + " -At -F '|' -c " + testing::shell_quote(sql));
  EXPECT_EQ(r.exit_code, 0) << sql << ": " << r.out;
  std::vector<std::string> out;
  for (size_t at = 0; at < r.out.size();) {
    const size_t nl = std::min(r.out.find('\n', at), r.out.size());
    if (nl > at) out.push_back(r.out.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

std::string hex(const std::vector<uint64_t>& hashes) {
  std::string out;
  for (uint64_t h : hashes)
    for (int b = 0; b < 8; ++b) out += fmt::format("{:02x}", (h >> (8 * b)) & 0xff);
  return out;
}

// A PostgreSQL store of the previous schema (1), dumped by pg_dump from a
// store the previous version wrote (tests/data/postgres_schema1.sql: probed
// trainings, one raising an alert, a profiled one), migrates to records
// that read back what its tables held.
TEST(MigrationTest, PostgresSchema1PerKindTablesBecomeRecordsThatReadBackEqual) {
  testing::TempDir dir;
  const std::string uri = testing::fresh_postgres_store(dir / "artifacts");
  ASSERT_FALSE(uri.empty());
  const std::string base = uri.substr(0, uri.find('?'));
  const std::string db = base.substr(base.rfind('/') + 1);
  const auto load = testing::run_command(
      "python3 " TS_PG_SERVER " psql " + testing::shell_quote(testing::postgres_dir().string()) +
      " " + db + " -f " TS_TEST_DATA_DIR "/postgres_schema1.sql");
  ASSERT_EQ(load.exit_code, 0) << load.out;
  const std::vector<std::string> fingerprints =
      pg_lines(db,
               "SELECT r.name, f.step, encode(f.hashes, 'hex') FROM "
               "fingerprints f JOIN runs r ON r.id = f.run_id ORDER BY 1, 2");
  const auto events =
      pg_lines(db,
               "SELECT r.name, e.step, e.name, e.source FROM run_events e JOIN runs "
               "r ON r.id = e.run_id ORDER BY e.id");
  const auto counts = pg_lines(db,
                               "SELECT (SELECT count(*) FROM histograms), (SELECT count(*) FROM "
                               "profile_cells), (SELECT count(*) FROM profile_layers)");
  ASSERT_EQ(fingerprints.size(), 10u);
  ASSERT_EQ(events.size(), 2u);

  auto store = Store::open({.uri = uri});
  EXPECT_EQ(store->schema_version(), store->latest_schema_version());
  std::vector<std::string> got_prints, got_events;
  int64_t hists = 0, cells = 0, layers = 0;
  for (const auto& r : store->list_runs({})) {
    for (const auto& f : fingerprint::read(*store, r.uuid).steps)
      got_prints.push_back(fmt::format("{}|{}|{}", r.name, f.step, hex(f.hashes)));
    for (const auto& e : probes::read_events(*store, r.uuid))
      got_events.push_back(fmt::format("{}|{}|{}|{}", r.name, e.step, e.name, e.source));
    hists += std::ssize(probes::read_histograms(*store, r.uuid));
    cells += std::ssize(profile::read_cells(*store, r.uuid));
    layers += std::ssize(profile::read_layers(*store, r.uuid));
  }
  auto want_prints = fingerprints;
  std::sort(want_prints.begin(), want_prints.end());
  std::sort(got_prints.begin(), got_prints.end());
  EXPECT_EQ(got_prints, want_prints);
  EXPECT_EQ(got_events, events);
  EXPECT_EQ(fmt::format("{}|{}|{}", hists, cells, layers), counts.at(0));
  EXPECT_TRUE(pg_lines(db, "SELECT to_regclass('histograms') IS NULL").at(0) == "t");
}
#endif

}  // namespace
}  // namespace trainscope::store
