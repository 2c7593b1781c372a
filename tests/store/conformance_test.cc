// The Store conformance suite: the contract of include/trainscope/store/
// store.h, checked through the public interface only. Every backend runs it
// unchanged; a new backend joins by adding its URI to backend_uri() and its
// name to the INSTANTIATE line at the bottom.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

#include "support/postgres_test.h"
#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/store.h"

namespace trainscope::store {
using core::Error;
using core::ErrorKind;
using core::sha256_file;
using core::sha256_hex;

namespace {

constexpr const char* kNoSuchRun = "00000000-0000-4000-8000-000000000000";
// A writer on another host: judged by its heartbeat only.
const WriterIdentity kRemote{"other-host.example", 4242, 1};

// The store a backend's tests run against, living in (or beside) `dir`.
std::string backend_uri(const std::string& backend, const std::filesystem::path& dir) {
  if (backend == "sqlite_file") return "sqlite:" + (dir / "t.db").string();
  if (backend == "sqlite_memory") return "sqlite::memory:";
  if (backend == "postgresql") return testing::fresh_postgres_store(dir / "artifacts");
  ADD_FAILURE() << "unknown backend " << backend;
  return {};
}

class StoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    uri_ = backend_uri(GetParam(), dir_.path());
    ASSERT_FALSE(uri_.empty());
    store_ = open();
  }
  std::unique_ptr<Store> open(StoreOptions o = {}) {
    o.uri = uri_;
    return Store::open(o);
  }
  std::filesystem::path write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return dir_ / name;
  }
  // The same store opened by a writer of another identity (for
  // sqlite::memory:, a fresh private store).
  std::unique_ptr<Store> open_as(const WriterIdentity& writer) { return open({.writer = writer}); }
  // A run "running" as if `writer` had written it, last heard of at `heartbeat`.
  // A running run of WRITER last heard of at HEARTBEAT, started then too
  // unless START is given.
  RunInfo plant(const std::string& name, const WriterIdentity& writer, double heartbeat,
                std::optional<double> start = std::nullopt) {
    RunInfo r;
    r.uuid = core::new_uuid();
    r.experiment = "default";
    r.name = name;
    r.status = RunStatus::kRunning;
    r.heartbeat = heartbeat;
    r.start_time = start.value_or(heartbeat);
    r.host = writer.host;
    r.pid = writer.pid;
    r.pid_start = writer.pid_start;
    store_->import_run(r);
    return r;
  }
  // Files of this test's folder whose name starts with `prefix`, but for
  // `except` (the artifact files of file and server stores are in it).
  int files_named(const std::string& prefix, const std::filesystem::path& except) {
    int n = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path()))
      if (e.path().filename().string().starts_with(prefix) && e.path() != except) ++n;
    return n;
  }
  RunInfo new_run(const std::string& name = {}, const std::string& experiment = "default") {
    NewRun nr;
    nr.name = name;
    nr.experiment = experiment;
    return store_->create_run(nr);
  }

  testing::TempDir dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreConformance, FreshStoreIsEmptyAndUpToDate) {
  EXPECT_EQ(store_->schema_version(), store_->latest_schema_version());
  EXPECT_TRUE(store_->list_runs().empty());
  EXPECT_TRUE(store_->list_experiments().empty());
  EXPECT_FALSE(store_->describe().empty());
}

TEST_P(StoreConformance, CreatedRunsReadBackWithEveryField) {
  NewRun nr;
  nr.experiment = "exp-a";
  nr.name = "first";
  nr.command_line = "trainscope train demo.yaml";
  nr.config_text = "lr: 0.1\n";
  RunInfo parent = store_->create_run(nr);
  nr.name = "child";
  nr.parent_uuid = parent.uuid;
  RunInfo child = store_->create_run(nr);
  EXPECT_EQ(child.uuid.size(), 36u);
  EXPECT_NE(child.uuid, parent.uuid);

  auto got = store_->find_run(child.uuid);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->experiment, "exp-a");
  EXPECT_EQ(got->name, "child");
  EXPECT_EQ(got->status, RunStatus::kRunning);
  EXPECT_EQ(got->parent_uuid, parent.uuid);
  EXPECT_EQ(got->command_line, "trainscope train demo.yaml");
  EXPECT_EQ(got->config_text, "lr: 0.1\n");
  EXPECT_EQ(got->config_hash, sha256_hex("lr: 0.1\n"));
  EXPECT_EQ(got->host, core::host_name());
  EXPECT_EQ(got->pid, getpid());
  EXPECT_EQ(got->pid_start, core::process_start_ticks(getpid()));
  EXPECT_GT(got->start_time, 1.7e9);
  EXPECT_EQ(got->end_time, 0);
  EXPECT_FALSE(store_->find_run(kNoSuchRun).has_value());
  EXPECT_EQ(store_->list_experiments(), std::vector<std::string>{"exp-a"});
}

TEST_P(StoreConformance, ARunsConfigCanBeReplacedAndItsHashFollows) {
  NewRun nr;
  nr.config_text = "study: a\n";
  RunInfo r = store_->create_run(nr);
  const std::string plan = "study: a\nreplicates: 3\n\xff bytes\n";
  store_->set_config(r.uuid, plan);
  auto got = store_->find_run(r.uuid);
  EXPECT_EQ(got->config_text, plan);
  EXPECT_EQ(got->config_hash, sha256_hex(plan));
  EXPECT_THROW(store_->set_config(kNoSuchRun, "x"), core::Error);
}

TEST_P(StoreConformance, TerminalStatusSetsTheEndTime) {
  RunInfo r = new_run();
  store_->set_status(r.uuid, RunStatus::kStopped);
  auto got = store_->find_run(r.uuid);
  EXPECT_EQ(got->status, RunStatus::kStopped);
  EXPECT_GE(got->end_time, got->start_time);
  // Running again (a resume) clears it.
  store_->set_status(r.uuid, RunStatus::kRunning);
  EXPECT_EQ(store_->find_run(r.uuid)->end_time, 0);
}

TEST_P(StoreConformance, ListRunsFiltersNewestFirstWithoutConfig) {
  NewRun nr;
  nr.experiment = "a";
  nr.name = "x";
  nr.config_text = "big config";
  std::vector<std::string> made;
  for (int i = 0; i < 3; ++i) made.push_back(store_->create_run(nr).uuid);
  nr.experiment = "b";
  nr.name = "y";
  made.push_back(store_->create_run(nr).uuid);
  store_->set_status(made[1], RunStatus::kFinished);

  auto all = store_->list_runs();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.front().uuid, made.back());  // newest first
  EXPECT_TRUE(all.front().config_text.empty());
  EXPECT_EQ(all.front().config_hash, sha256_hex("big config"));
  EXPECT_EQ(store_->list_runs({.experiment = "a"}).size(), 3u);
  EXPECT_EQ(store_->list_runs({.status = RunStatus::kFinished}).at(0).uuid, made[1]);
  EXPECT_EQ(store_->list_runs({.name = "y"}).at(0).uuid, made[3]);
  EXPECT_EQ(store_->list_runs({.uuid_prefix = made[2].substr(0, 36)}).at(0).uuid, made[2]);
  EXPECT_EQ(store_->list_runs({.limit = 2}).size(), 2u);
  EXPECT_TRUE(store_->list_runs({.experiment = "nope"}).empty());
}

TEST_P(StoreConformance, ResolveRunByUuidPrefixNameAndAmbiguity) {
  RunInfo a = new_run("alpha");
  RunInfo b = new_run("beta");
  RunInfo b2 = new_run("beta");
  EXPECT_EQ(store_->resolve_run(a.uuid).uuid, a.uuid);
  RunInfo by_name = store_->resolve_run("alpha");
  EXPECT_EQ(by_name.uuid, a.uuid);
  size_t n = 1;  // the shortest prefix that tells a apart from the others
  while (a.uuid.substr(0, n) == b.uuid.substr(0, n) || a.uuid.substr(0, n) == b2.uuid.substr(0, n))
    ++n;
  EXPECT_EQ(store_->resolve_run(a.uuid.substr(0, n)).uuid, a.uuid);
  try {
    store_->resolve_run("beta");
    FAIL() << "a name shared by two runs is ambiguous";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find(b.uuid.substr(0, 8)), std::string::npos) << e.what();
  }
  try {
    store_->resolve_run("zzz-unknown");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
  EXPECT_THROW(store_->resolve_run(""), Error);
}

// Issue 29, item 7: a run named `a` (or `cafe`) became ambiguous as soon
// as another run's UUID started with those letters. An exact name wins over
// a UUID prefix, with a note saying how to name the other run; prefixes are
// read in any case; a run named twice counts once.
TEST_P(StoreConformance, AnExactNameWinsOverAUuidPrefix) {
  std::vector<RunInfo> others;
  // Runs until one's UUID starts with a letter; a run is then named so.
  std::string letter;
  while (letter.empty()) {
    others.push_back(new_run());
    if (std::isalpha(static_cast<unsigned char>(others.back().uuid[0])))
      letter = others.back().uuid.substr(0, 1);
  }
  RunInfo named = new_run(letter);
  while (named.uuid.starts_with(letter)) {  // its own name would be its prefix too
    store_->delete_run(named.uuid);
    named = new_run(letter);
  }
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(store_->resolve_run(letter).uuid, named.uuid);
  const std::string note = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(note.find("note: '" + letter + "' is the name of run " + named.uuid.substr(0, 8)),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("named by more of its UUID"), std::string::npos) << note;
  EXPECT_EQ(std::count(note.begin(), note.end(), '\n'), 1) << note;
  // Prefixes in any case.
  const RunInfo& target = others.back();
  std::string upper = target.uuid.substr(0, 13);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(store_->resolve_run(upper).uuid, target.uuid);
  std::string full = target.uuid;
  for (char& c : full) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(store_->resolve_run(full).uuid, target.uuid);
  // Named twice, by one reference or two: once.
  auto runs = store_->resolve_runs({letter, target.uuid.substr(0, 13), letter, named.uuid});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].uuid, named.uuid);
  EXPECT_EQ(runs[1].uuid, target.uuid);
  // A name of another run's first 8 digits: the note's example is longer
  // than the name (it said those same 8 digits; twenty-sixth hunt, B-D1).
  const std::string eight = target.uuid.substr(0, 8);
  const RunInfo twin = new_run(eight);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(store_->resolve_run(eight).uuid, twin.uuid);
  const std::string note8 = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(note8.find("e.g. '" + target.uuid.substr(0, 13) + "'"), std::string::npos) << note8;
  EXPECT_EQ(store_->resolve_run(target.uuid.substr(0, 13)).uuid, target.uuid);
}

// Default names stay unique: "demo", then "demo-2", "demo-3"; a name given
// on purpose is kept as it is, even when taken.
TEST_P(StoreConformance, DefaultNamesAreMadeUnique) {
  NewRun n;
  n.name = "demo";
  n.unique_name = true;
  EXPECT_EQ(store_->create_run(n).name, "demo");
  EXPECT_EQ(store_->create_run(n).name, "demo-2");
  EXPECT_EQ(store_->create_run(n).name, "demo-3");
  n.name = "dem";  // a prefix of the others is its own name
  EXPECT_EQ(store_->create_run(n).name, "dem");
  n.name = "demo";
  n.unique_name = false;
  EXPECT_EQ(store_->create_run(n).name, "demo");
  EXPECT_EQ(store_->resolve_run("demo-3").name, "demo-3");
  EXPECT_EQ(next_free_name("a", {"a", "a-9", "a-x", "a-2-1", "ab-20"}), "a-10");
  EXPECT_EQ(next_free_name("a", {"a-2"}), "a");
}

TEST_P(StoreConformance, ParamsAreImmutableTagsAreNot) {
  RunInfo r = new_run();
  store_->set_param(r.uuid, "lr", "0.1");
  store_->set_param(r.uuid, "lr", "0.1");  // same value: fine
  try {
    store_->set_param(r.uuid, "lr", "0.2");
    FAIL() << "changing a param must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find("immutable"), std::string::npos) << e.what();
  }
  // A batch with one conflicting value changes nothing.
  EXPECT_THROW(store_->set_params(r.uuid, {{"batch", "64"}, {"lr", "0.3"}}), Error);
  EXPECT_EQ(store_->params(r.uuid), (std::map<std::string, std::string>{{"lr", "0.1"}}));
  store_->set_tag(r.uuid, "note", "a");
  store_->set_tag(r.uuid, "note", "b");
  store_->set_tag(r.uuid, "x", "1");
  store_->delete_tag(r.uuid, "x");
  EXPECT_EQ(store_->tags(r.uuid), (std::map<std::string, std::string>{{"note", "b"}}));
}

TEST_P(StoreConformance, OddKeysAndValuesRoundTrip) {
  RunInfo r = new_run();
  const std::string odd = "a,b \"q\"\n\t\\ üñï/%_'; DROP TABLE runs; --";
  store_->set_param(r.uuid, odd, odd);
  store_->set_tag(r.uuid, odd, odd);
  store_->set_environment(r.uuid, {{odd, odd}});
  store_->append_metrics(r.uuid, {{odd, {{1, 2.0, 3.0}}}});
  EXPECT_EQ(store_->params(r.uuid).at(odd), odd);
  EXPECT_EQ(store_->tags(r.uuid).at(odd), odd);
  EXPECT_EQ(store_->environment(r.uuid).at(odd), odd);
  ASSERT_EQ(store_->metric(r.uuid, odd).size(), 1u);
  EXPECT_EQ(store_->metric_summaries(r.uuid).at(0).key, odd);
}

// Names and values are bytes: invalid UTF-8, NUL, control characters and
// what looks like a backend's own escaping all come back as they went in.
TEST_P(StoreConformance, BytesThatAreNotUtf8RoundTrip) {
  const std::string odd[] = {std::string("caf\xe9 latin-1"),
                             std::string("nul\0inside", 11),
                             "\x10"
                             "ff looks escaped",
                             "\xed\xa0\x80 surrogate",
                             "\xc0\xaf overlong",
                             "cut \xe2\x82",
                             "ok \xe2\x82\xac"};
  for (const auto& s : odd) {
    NewRun nr;
    nr.name = s;
    nr.experiment = s;
    nr.config_text = s;
    RunInfo r = store_->create_run(nr);
    store_->set_param(r.uuid, s, s);
    store_->set_tag(r.uuid, s, s);
    store_->set_environment(r.uuid, {{s, s}});
    store_->append_metrics(r.uuid, {{s, {{1, 2.0, 3.0}}}});
    store_->append_records(r.uuid, "notes", {{s, 1, 1.0, s}});
    auto got = store_->find_run(r.uuid);
    EXPECT_EQ(got->name, s);
    EXPECT_EQ(got->experiment, s);
    EXPECT_EQ(got->config_text, s);
    EXPECT_EQ(store_->params(r.uuid).at(s), s);
    EXPECT_EQ(store_->tags(r.uuid).at(s), s);
    EXPECT_EQ(store_->environment(r.uuid).at(s), s);
    EXPECT_EQ(store_->metric(r.uuid, s).size(), 1u);
    EXPECT_EQ(store_->metric_summaries(r.uuid).at(0).key, s);
    EXPECT_EQ(store_->records(r.uuid, "notes", s).at(0).payload, s);
    EXPECT_EQ(store_->list_runs({.name = s}).at(0).uuid, r.uuid);
  }
  // Keys sort by their bytes, whatever the backend's locale.
  RunInfo r = new_run();
  store_->append_metrics(r.uuid, {{"b", {{0, 0, 1}}},
                                  {"B", {{0, 0, 1}}},
                                  {"\xc3\xa9", {{0, 0, 1}}},
                                  {"a", {{0, 0, 1}}},
                                  {"_", {{0, 0, 1}}}});
  std::vector<std::string> keys;
  for (const auto& m : store_->metric_summaries(r.uuid)) keys.push_back(m.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"B", "_", "a", "b", "\xc3\xa9"}));
}

// Times the store stamps and the reaper's "now" come from one clock.
TEST_P(StoreConformance, TheStoreClockStampsRuns) {
  const double before = store_->now();
  RunInfo r = new_run();
  const double after = store_->now();
  EXPECT_GT(before, 1.7e9);
  EXPECT_LE(before, r.start_time);
  EXPECT_LE(r.start_time, after);
  store_->heartbeat(r.uuid);
  EXPECT_LE(store_->find_run(r.uuid)->heartbeat, store_->now());
  EXPECT_EQ(store_->reap_stale_runs(), 0);  // by the store's clock the run is alive
}

TEST_P(StoreConformance, MetricsKeepNonFiniteValuesBitForBit) {
  RunInfo r = new_run();
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  const double payload_nan = std::bit_cast<double>(uint64_t{0x7ff8000000000123});
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<MetricPoint> pts = {{0, 1.0, 0.5},  {1, 1.1, qnan},        {2, 1.2, inf},
                                  {3, 1.3, -inf}, {4, 1.4, payload_nan}, {5, 1.5, -qnan},
                                  {6, 1.6, -0.0}, {2, 1.7, 7.0}};  // steps need not increase
  store_->append_metrics(r.uuid, {{"loss", pts}});
  auto back = store_->metric(r.uuid, "loss");
  ASSERT_EQ(back.size(), pts.size());
  for (size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(back[i].step, pts[i].step);
    EXPECT_EQ(std::bit_cast<uint64_t>(back[i].value), std::bit_cast<uint64_t>(pts[i].value)) << i;
    EXPECT_EQ(back[i].wall_time, pts[i].wall_time);
  }
  auto s = store_->metric_summaries(r.uuid).at(0);
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.last_step, 2);
  EXPECT_EQ(s.last_value, 7.0);
  EXPECT_EQ(s.min, -0.0);  // over finite values only
  EXPECT_EQ(s.max, 7.0);
}

TEST_P(StoreConformance, MetricsAppendAcrossBatchesAndLargeSeries) {
  RunInfo r = new_run();
  std::vector<MetricPoint> big;
  for (int i = 0; i < 20000; ++i) big.push_back({i, 100.0 + i, std::sin(i)});
  store_->append_metrics(r.uuid, {{"a", big}, {"b", {{0, 1, 1}}}});
  store_->append_metrics(r.uuid, {{"a", {{20000, 1, -5}}}});
  auto back = store_->metric(r.uuid, "a");
  ASSERT_EQ(back.size(), 20001u);
  for (int i = 0; i < 20000; ++i) ASSERT_EQ(back[i].value, std::sin(i));
  EXPECT_EQ(back.back().value, -5);
  auto summaries = store_->metric_summaries(r.uuid);
  ASSERT_EQ(summaries.size(), 2u);  // sorted by key
  EXPECT_EQ(summaries[0].key, "a");
  EXPECT_EQ(summaries[0].min, -5);
  EXPECT_EQ(summaries[1].count, 1);
  EXPECT_TRUE(store_->metric(r.uuid, "missing").empty());
}

// A live reader asks only for the points after those it has; chunk
// boundaries (batches of 20000, 7 and 1 points here) must not show.
TEST_P(StoreConformance, MetricFromReturnsThePointsAfterAnAppendIndex) {
  RunInfo r = new_run();
  std::vector<MetricPoint> big;
  for (int i = 0; i < 20000; ++i) big.push_back({i, 1.0, i * 0.5});
  store_->append_metrics(r.uuid, {{"a", big}});
  std::vector<MetricPoint> seven;
  for (int i = 20000; i < 20007; ++i) seven.push_back({i, 2.0, i * 0.5});
  store_->append_metrics(r.uuid, {{"a", seven}});
  store_->append_metrics(r.uuid, {{"a", {{20007, 3.0, -1}}}});
  const auto all = store_->metric(r.uuid, "a");
  for (int64_t first : {int64_t{-3}, int64_t{0}, int64_t{1}, int64_t{19999}, int64_t{20000},
                        int64_t{20003}, int64_t{20007}, int64_t{20008}, int64_t{50000}}) {
    const auto tail = store_->metric_from(r.uuid, "a", first);
    const size_t skip = static_cast<size_t>(std::clamp<int64_t>(first, 0, std::ssize(all)));
    ASSERT_EQ(tail.size(), all.size() - skip) << "from " << first;
    for (size_t i = 0; i < tail.size(); ++i) {
      ASSERT_EQ(tail[i].step, all[skip + i].step) << "from " << first;
      ASSERT_EQ(tail[i].value, all[skip + i].value) << "from " << first;
    }
  }
  EXPECT_TRUE(store_->metric_from(r.uuid, "missing", 0).empty());
  EXPECT_TRUE(store_->metric_from(r.uuid, "missing", 5).empty());
}

// Bulk reads give what run-by-run reads give, for a few runs and for many
// (the SQLite backend switches strategy at 64).
TEST_P(StoreConformance, RunFieldsOfManyRunsEqualRunByRunReads) {
  std::vector<std::string> uuids;
  for (int i = 0; i < 80; ++i) {
    RunInfo r = new_run();
    if (i % 3 == 0) store_->set_params(r.uuid, {{"lr", std::to_string(i)}, {"opt", "adam"}});
    if (i % 4 == 0) store_->set_tag(r.uuid, "note", "n" + std::to_string(i));
    if (i % 5 == 0) store_->append_metrics(r.uuid, {{"loss", {{1, 1, 1.0 / (i + 1)}}}});
    uuids.push_back(r.uuid);
  }
  RunInfo other = new_run();  // not asked for: not returned
  store_->set_params(other.uuid, {{"lr", "9"}});
  for (size_t n : {size_t{5}, uuids.size()}) {
    const std::vector<std::string> some(uuids.begin(), uuids.begin() + n);
    auto all = store_->run_fields(some, true, true, true);
    ASSERT_EQ(all.size(), n);
    for (const auto& u : some) {
      EXPECT_EQ(all[u].params, store_->params(u));
      EXPECT_EQ(all[u].tags, store_->tags(u));
      const auto m = store_->metric_summaries(u);
      ASSERT_EQ(all[u].metrics.size(), m.size());
      for (size_t k = 0; k < m.size(); ++k) {
        EXPECT_EQ(all[u].metrics[k].key, m[k].key);
        EXPECT_EQ(all[u].metrics[k].last_value, m[k].last_value);
      }
    }
    EXPECT_FALSE(all.count(other.uuid));
    EXPECT_TRUE(store_->run_fields(some, false, true, false)[some[0]].params.empty());
  }
}

TEST_P(StoreConformance, EnvironmentEntriesReplaceEarlierValues) {
  RunInfo r = new_run();
  store_->set_environment(r.uuid, {{"hardware.cpu", "a"}, {"threads.torch", "1"}});
  store_->set_environment(r.uuid, {{"threads.torch", "2"}});
  EXPECT_EQ(store_->environment(r.uuid),
            (std::map<std::string, std::string>{{"hardware.cpu", "a"}, {"threads.torch", "2"}}));
}

// Records: a capability's series (Store::append_records). The store keeps
// bytes by (kind, key, step) in the order added and never looks inside.
TEST_P(StoreConformance, RecordsKeepTheirOrderAndTheFirstOfAKeyAndStep) {
  RunInfo r = new_run();
  EXPECT_EQ(store_->append_records(r.uuid, "histograms",
                                   {{"conv1/weights", 10, 1.5, "a10"},
                                    {"fc/weights", 10, 1.5, "f10"},
                                    {"conv1/weights", 10, 9.0, "dup in batch"},
                                    {"conv1/weights", 5, 2.5, "a5"}}),
            3);
  // A resumed run replays step 10: the first written is kept.
  EXPECT_EQ(store_->append_records(
                r.uuid, "histograms",
                {{"conv1/weights", 10, 3.0, "replayed"}, {"conv1/weights", 20, 4.0, "a20"}}),
            1);
  EXPECT_EQ(store_->append_records(r.uuid, "events", {{"", 0, 0, ""}}), 1);  // empty key, payload
  EXPECT_EQ(store_->append_records(r.uuid, "events", {}), 0);
  auto all = store_->records(r.uuid, "histograms");
  std::vector<std::string> payloads;
  for (const auto& x : all) payloads.push_back(x.payload);
  EXPECT_EQ(payloads, (std::vector<std::string>{"a10", "f10", "a5", "a20"}));
  auto conv = store_->records(r.uuid, "histograms", "conv1/weights");
  ASSERT_EQ(conv.size(), 3u);
  EXPECT_EQ(conv[0].step, 10);
  EXPECT_EQ(conv[0].wall_time, 1.5);
  EXPECT_EQ(conv[1].payload, "a5");
  EXPECT_TRUE(store_->records(r.uuid, "histograms", "").empty());  // "" is a key like any
  EXPECT_EQ(store_->records(r.uuid, "events", "").size(), 1u);
  EXPECT_EQ(store_->record_kinds(r.uuid),
            (std::map<std::string, int64_t>{{"events", 1}, {"histograms", 4}}));
  EXPECT_TRUE(store_->records(r.uuid, "no_such_kind").empty());
  EXPECT_TRUE(store_->records("no-such-run", "histograms").empty());
  EXPECT_TRUE(store_->record_kinds("no-such-run").empty());
  store_->delete_run(r.uuid);
  EXPECT_TRUE(store_->record_kinds(r.uuid).empty());
}

// Eleventh tester, 11b-D7: a view on the dashboard read every record of
// its kind and then kept a sample. A sample of records is read as such:
// every k-th in the order added, counted in the same read; and while a
// RecordSampling lives, records() of that kind (and no one key) reads it.
TEST_P(StoreConformance, ASampleOfRecordsIsEveryKthCountedInTheSameRead) {
  RunInfo r = new_run();
  std::vector<Record> recs;
  for (int i = 0; i < 10; ++i)
    recs.push_back({"k" + std::to_string(i % 2), i, 0.5 * i, "p" + std::to_string(i)});
  ASSERT_EQ(store_->append_records(r.uuid, "samples", recs), 10);
  store_->append_records(r.uuid, "other", {{"k", 1, 0, "o"}});
  auto payloads = [](const std::vector<Record>& v) {
    std::vector<std::string> out;
    for (const auto& x : v) out.push_back(x.payload);
    return out;
  };
  using Names = std::vector<std::string>;
  int64_t count = -1;
  const auto three = store_->sample_records(r.uuid, "samples", 3, count);
  EXPECT_EQ(payloads(three), (Names{"p0", "p4", "p8"}));  // every ceil(10 / 3) = 4th
  EXPECT_EQ(count, 10);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[1].key, "k0");
  EXPECT_EQ(three[1].step, 4);
  EXPECT_EQ(three[1].wall_time, 2.0);
  EXPECT_EQ(payloads(store_->sample_records(r.uuid, "samples", 5, count)),
            (Names{"p0", "p2", "p4", "p6", "p8"}));
  EXPECT_EQ(payloads(store_->sample_records(r.uuid, "samples", 10, count)),
            payloads(store_->records(r.uuid, "samples")));
  EXPECT_EQ(payloads(store_->sample_records(r.uuid, "samples", 0, count)), (Names{"p0"}));
  EXPECT_EQ(store_->sample_records(r.uuid, "other", 3, count).size(), 1u);
  EXPECT_EQ(count, 1);
  EXPECT_TRUE(store_->sample_records(r.uuid, "no_such_kind", 3, count).empty());
  EXPECT_EQ(count, 0);
  EXPECT_TRUE(store_->sample_records(kNoSuchRun, "samples", 3, count).empty());
  {
    RecordSampling sampling(*store_, "samples", 4);
    EXPECT_EQ(payloads(store_->records(r.uuid, "samples")), (Names{"p0", "p3", "p6", "p9"}));
    EXPECT_EQ(store_->records(r.uuid, "samples", "k0").size(), 5u);  // one key: all of them
    EXPECT_EQ(store_->records(r.uuid, "other").size(), 1u);
    EXPECT_EQ(sampling.reads(), 1);
    EXPECT_EQ(sampling.taken(), 4);
    EXPECT_EQ(sampling.count(), 10);
    EXPECT_THROW({ RecordSampling again(*store_, "other", 1); }, Error);
  }
  EXPECT_EQ(store_->records(r.uuid, "samples").size(), 10u);
}

// ... and a chart read a whole series to draw a sample of it: a series is
// handed over a chunk at a time, the points metric_from gives.
TEST_P(StoreConformance, AScanOfAMetricHandsOverMetricFromsPointsAChunkAtATime) {
  RunInfo r = new_run();
  for (int b = 0; b < 3; ++b) {
    std::vector<MetricPoint> batch;
    for (int i = b * 10000; i < (b + 1) * 10000; ++i) batch.push_back({i, 1.0 * i, std::sin(i)});
    store_->append_metrics(r.uuid, {{"m", batch}});
  }
  for (const int64_t first : {0, 1, 8191, 8192, 8193, 10000, 29999, 30000, 99999}) {
    std::vector<MetricPoint> got;
    int calls = 0;
    store_->scan_metric(r.uuid, "m", first, [&](const std::vector<MetricPoint>& chunk) {
      ++calls;
      EXPECT_FALSE(chunk.empty());
      got.insert(got.end(), chunk.begin(), chunk.end());
      return true;
    });
    const auto want = store_->metric_from(r.uuid, "m", first);
    ASSERT_EQ(got.size(), want.size()) << first;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].step, want[i].step) << first << " " << i;
      ASSERT_EQ(got[i].wall_time, want[i].wall_time);
      ASSERT_EQ(got[i].value, want[i].value);
    }
    if (first == 0) {
      EXPECT_GE(calls, 3);  // a chunk at a time, not the series at once
    }
    if (first >= 30000) {
      EXPECT_EQ(calls, 0);
    }
  }
  int calls = 0;
  store_->scan_metric(r.uuid, "m", 0, [&](const std::vector<MetricPoint>&) {
    ++calls;
    return false;  // stop
  });
  EXPECT_EQ(calls, 1);
  store_->scan_metric(r.uuid, "none", 0, [&](const std::vector<MetricPoint>&) {
    ++calls;
    return true;
  });
  store_->scan_metric(kNoSuchRun, "m", 0, [&](const std::vector<MetricPoint>&) {
    ++calls;
    return true;
  });
  EXPECT_EQ(calls, 1);
}

// Payloads are bytes of any length, bit for bit; a step may be any int64.
TEST_P(StoreConformance, RecordPayloadsAreBytesOfAnyLength) {
  RunInfo r = new_run();
  std::string all_bytes;
  for (int i = 0; i < (1 << 20); ++i) all_bytes.push_back(static_cast<char>(i * 7 % 256));
  const std::string key("l\0/\xff", 4);  // l, NUL, /, 0xff
  store_->append_records(r.uuid, "blob.v1-x",
                         {{key, std::numeric_limits<int64_t>::max(), 0, all_bytes},
                          {key, std::numeric_limits<int64_t>::min(), -1.25, std::string(1, '\0')}});
  auto got = store_->records(r.uuid, "blob.v1-x", key);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].payload, all_bytes);
  EXPECT_EQ(got[0].step, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(got[1].payload, std::string(1, '\0'));
  EXPECT_EQ(got[1].wall_time, -1.25);
}

// A bad kind, key or payload is refused in one line naming it, and nothing
// of the batch is written; an unknown run is kNotFound.
TEST_P(StoreConformance, RecordsOutsideTheRulesAreRefusedAndNothingIsWritten) {
  RunInfo r = new_run();
  const std::vector<std::string> kinds = {"",    "Upper",       "1st",
                                          "a b", "caf\xc3\xa9", std::string(65, 'k')};
  for (const auto& kind : kinds) {
    try {
      store_->append_records(r.uuid, kind, {{"k", 1, 0, "p"}});
      ADD_FAILURE() << "kind '" << kind << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find("is not a kind name"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(store_->append_records(r.uuid, std::string(64, 'k'), {}));
  const Record ok{"k", 1, 0, "p"};
  const Record long_key{std::string(kMaxRecordKeyBytes + 1, 'x'), 2, 0, "p"};
  EXPECT_THROW(store_->append_records(r.uuid, "kind", {ok, long_key}), Error);
  const Record huge{"k", 3, 0, std::string(kMaxRecordPayloadBytes + 1, 'p')};
  EXPECT_THROW(store_->append_records(r.uuid, "kind", {ok, huge}), Error);
  EXPECT_TRUE(store_->record_kinds(r.uuid).empty());
  try {
    store_->append_records("no-such-run", "kind", {ok});
    ADD_FAILURE() << "a record of an unknown run was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound) << e.what();
  }
}

TEST_P(StoreConformance, ArtifactsAreCopiedHashedAndNeverOverwritten) {
  RunInfo r = new_run();
  auto model = write("model.bin", "weights");
  ArtifactInfo a = store_->add_artifact(r.uuid, model, "checkpoint", "ckpt/model.bin");
  EXPECT_EQ(a.name, "ckpt/model.bin");
  EXPECT_EQ(a.sha256, sha256_hex("weights"));
  EXPECT_EQ(a.size, 7);
  ASSERT_TRUE(std::filesystem::exists(a.path));
  std::filesystem::remove(model);  // the store keeps its own copy
  auto list = store_->artifacts(r.uuid);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].kind, "checkpoint");
  EXPECT_EQ(list[0].path, a.path);
  EXPECT_EQ(sha256_file(list[0].path), a.sha256);
  // Same content again: fine. Different content under the same name: refused.
  write("model.bin", "weights");
  EXPECT_NO_THROW(store_->add_artifact(r.uuid, model, "checkpoint", "ckpt/model.bin"));
  try {
    store_->add_artifact(r.uuid, write("model2.bin", "other"), "checkpoint", "ckpt/model.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
  }
  EXPECT_EQ(sha256_file(a.path), sha256_hex("weights"));
  EXPECT_EQ(store_->add_artifact(r.uuid, model, "weights").name, "model.bin");  // default name
  EXPECT_THROW(store_->add_artifact(r.uuid, model, "x", "../escape"), Error);
  EXPECT_THROW(store_->add_artifact(r.uuid, model, "x", "/abs"), Error);
  EXPECT_THROW(store_->add_artifact(r.uuid, dir_ / "missing.bin", "x"), Error);
  EXPECT_EQ(store_->artifacts(r.uuid).size(), 2u);
}

// Written in place (checkpoints, predictions, traces): hashed as written,
// same rules for a name already taken; a writer that throws leaves nothing.
TEST_P(StoreConformance, ArtifactsWrittenInPlaceFollowTheSameRules) {
  RunInfo r = new_run();
  auto body = [](const std::string& text) { return [text](std::ostream& o) { o << text; }; };
  const std::string big(300000, 'w');  // several stream buffers
  ArtifactInfo a = store_->write_artifact(r.uuid, "ckpt/step-1.pt", "checkpoint", body(big));
  EXPECT_EQ(a.sha256, sha256_hex(big));
  EXPECT_EQ(a.size, 300000);
  EXPECT_EQ(sha256_file(a.path), a.sha256);
  EXPECT_NO_THROW(verify_artifact(store_->artifacts(r.uuid).at(0)));
  EXPECT_EQ(store_->write_artifact(r.uuid, "ckpt/step-1.pt", "checkpoint", body(big)).sha256,
            a.sha256);
  try {
    store_->write_artifact(r.uuid, "ckpt/step-1.pt", "checkpoint", body("other"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
  }
  EXPECT_EQ(sha256_file(a.path), sha256_hex(big));
  EXPECT_THROW(store_->write_artifact(r.uuid, "half.bin", "x",
                                      [](std::ostream& o) {
                                        o << "half";
                                        throw std::runtime_error("writer failed");
                                      }),
               std::runtime_error);
  EXPECT_EQ(store_->artifacts(r.uuid).size(), 1u);
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(a.path.parent_path().parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  EXPECT_THROW(store_->write_artifact(r.uuid, "../escape", "x", body("x")), Error);
}

TEST_P(StoreConformance, DeletingARunRemovesEverythingRecordedForIt) {
  RunInfo r = new_run("doomed");
  RunInfo keep = new_run("kept");
  store_->set_param(r.uuid, "k", "v");
  store_->set_tag(r.uuid, "t", "v");
  store_->append_metrics(r.uuid, {{"m", {{0, 0, 1}}}});
  store_->append_metrics(keep.uuid, {{"m", {{0, 0, 2}}}});
  ArtifactInfo a = store_->add_artifact(r.uuid, write("f.txt", "x"), "file");
  store_->delete_run(r.uuid);
  EXPECT_FALSE(store_->find_run(r.uuid).has_value());
  EXPECT_FALSE(std::filesystem::exists(a.path));
  EXPECT_TRUE(store_->params(r.uuid).empty());
  EXPECT_TRUE(store_->tags(r.uuid).empty());
  EXPECT_TRUE(store_->metric(r.uuid, "m").empty());
  EXPECT_TRUE(store_->artifacts(r.uuid).empty());
  EXPECT_EQ(store_->metric(keep.uuid, "m").at(0).value, 2);
  EXPECT_THROW(store_->delete_run(r.uuid), Error);
}

TEST_P(StoreConformance, HeartbeatMovesForward) {
  RunInfo r = new_run();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  store_->heartbeat(r.uuid);
  EXPECT_GT(store_->find_run(r.uuid)->heartbeat, r.heartbeat);
}

// Runs of another host are judged by their heartbeat; a live process of
// this host keeps its run however long it is silent (issue 29, item 3: a
// training paused with Ctrl-Z for 35 s was marked killed).
TEST_P(StoreConformance, ReaperKillsSilentRunsAndSparesLiveAndEndedOnes) {
  RunInfo live = new_run("live");  // this process, alive
  const double hb = store_->now();
  RunInfo away = plant("away", kRemote, hb);
  RunInfo done = new_run("done");
  store_->set_status(done.uuid, RunStatus::kFinished);
  // Fresh heartbeats: nothing to reap.
  EXPECT_EQ(store_->reap_stale_runs(hb + 1), 0);
  EXPECT_EQ(store_->find_run(away.uuid)->status, RunStatus::kRunning);
  // 31 s of silence is more than the default 30 s for a run of another host.
  EXPECT_EQ(store_->reap_stale_runs(hb + 31), 1);
  auto killed = store_->find_run(away.uuid);
  EXPECT_EQ(killed->status, RunStatus::kKilled);
  EXPECT_EQ(killed->end_time, hb);  // it ended when it was last heard of
  EXPECT_EQ(store_->find_run(done.uuid)->status, RunStatus::kFinished);
  // A day of silence: this process is alive, so its run is not reaped.
  EXPECT_EQ(store_->reap_stale_runs(hb + 86400), 0);
  EXPECT_EQ(store_->find_run(live.uuid)->status, RunStatus::kRunning);
}

// Seventeenth hunt, 17B-D2: a heartbeat a year ahead (another host's
// clock) was the stale run's end: every reader showed 8760 h and the
// reaper wrote it as end_time; one before the start gave an end before
// it. Such a run ends now, or (before its start) at an unknown time.
TEST_P(StoreConformance, AHeartbeatFromTheFutureOrBeforeTheStartIsNoEnd) {
  const double now = store_->now();
  RunInfo ahead = plant("ahead", kRemote, now + 86400 * 365, now - 100);
  RunInfo before = plant("before", kRemote, now - 1000, now - 10);
  const double shown = run_seconds(*store_->find_run(ahead.uuid), now);
  EXPECT_GE(shown, 100);
  EXPECT_LT(shown, 200);
  EXPECT_TRUE(std::isnan(run_seconds(*store_->find_run(before.uuid), now)));
  EXPECT_EQ(store_->reap_stale_runs(now), 2);
  const RunInfo a = *store_->find_run(ahead.uuid);
  EXPECT_EQ(a.status, RunStatus::kKilled);
  EXPECT_GE(a.end_time, now);
  EXPECT_LE(a.end_time, store_->now());
  const RunInfo b = *store_->find_run(before.uuid);
  EXPECT_EQ(b.status, RunStatus::kKilled);
  EXPECT_EQ(b.end_time, 0);  // unknown
  EXPECT_TRUE(std::isnan(run_seconds(b, store_->now())));
}

// On this host the PID decides at once: a process that has exited (a
// zombie included) or a PID now used by another process (another start
// time) has lost its run, however fresh its heartbeat.
TEST_P(StoreConformance, ReaperKillsARunOfThisHostWhoseProcessIsGone) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  const int64_t start = core::process_start_ticks(child);
  ASSERT_GT(start, 0);
  // Until it is waited for, the child is a zombie: not alive.
  for (int i = 0; i < 500 && core::process_alive(child, start); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double hb = store_->now();
  RunInfo zombie = plant("zombie", {core::host_name(), child, start}, hb);
  RunInfo reused = plant(
      "reused-pid", {core::host_name(), getpid(), core::process_start_ticks(getpid()) + 1}, hb);
  RunInfo live = new_run("live");
  EXPECT_EQ(store_->reap_stale_runs(hb), 2);
  EXPECT_EQ(store_->find_run(zombie.uuid)->status, RunStatus::kKilled);
  EXPECT_EQ(store_->find_run(reused.uuid)->status, RunStatus::kKilled);
  EXPECT_EQ(store_->find_run(live.uuid)->status, RunStatus::kRunning);
  waitpid(child, nullptr, 0);
}

// The lease, part 1: a run has one writer. Claiming a run (a resume) that
// its writer still holds is refused, naming the run, the writer and what
// to do; once the run has ended it can be claimed.
TEST_P(StoreConformance, AClaimIsRefusedWhileTheWriterLives) {
  RunInfo r = new_run("busy");
  std::vector<std::unique_ptr<Store>> others;  // the same process, another store object
  if (GetParam() != "sqlite_memory") others.push_back(open());
  std::vector<Store*> claimants = {store_.get()};
  for (auto& o : others) claimants.push_back(o.get());
  for (Store* s : claimants) {
    try {
      s->set_status(r.uuid, RunStatus::kRunning);
      FAIL() << "a running run was claimed twice";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::kConflict) << msg;
      EXPECT_NE(msg.find(r.uuid.substr(0, 8)), std::string::npos) << msg;
      EXPECT_NE(msg.find("pid " + std::to_string(getpid())), std::string::npos) << msg;
      EXPECT_NE(msg.find(core::host_name()), std::string::npos) << msg;
      EXPECT_NE(msg.find("stop that process first"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  // A writer of another host that is not yet judged stale keeps its run too.
  RunInfo away = plant("away", kRemote, store_->now());
  try {
    store_->set_status(away.uuid, RunStatus::kRunning);
    FAIL() << "a run of another host was claimed while its writer beats";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict) << e.what();
    EXPECT_NE(std::string(e.what()).find("silent for 30 s"), std::string::npos) << e.what();
  }
  store_->append_metrics(r.uuid, {{"loss", {{1, 0, 1.0}}}});  // the holder still writes
  store_->set_status(r.uuid, RunStatus::kStopped);
  claimants.back()->set_status(r.uuid, RunStatus::kRunning);  // ended: a resume may claim it
  EXPECT_EQ(store_->find_run(r.uuid)->status, RunStatus::kRunning);
  EXPECT_EQ(store_->find_run(r.uuid)->end_time, 0);
}

// Every write a recorder makes into a run, tried by a writer whose lease
// is gone: each throws LeaseLost (kConflict, one line saying what
// happened) and writes nothing.
void expect_every_write_refused(Store& s, const std::string& uuid, const std::string& why,
                                const std::filesystem::path& file) {
  auto refused = [&](const char* what, const std::function<void()>& f) {
    try {
      f();
      ADD_FAILURE() << what << " was written by a writer without the lease";
    } catch (const LeaseLost& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConflict) << what;
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(uuid.substr(0, 8)), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": not LeaseLost: " << e.what();
    }
  };
  refused("metrics", [&] { s.append_metrics(uuid, {{"loss", {{99, 0, 9.0}}}}); });
  refused("records", [&] { s.append_records(uuid, "histograms", {{"l/w", 99, 0, "late"}}); });
  refused("environment", [&] { s.set_environment(uuid, {{"host.late", "1"}}); });
  refused("params", [&] { s.set_params(uuid, {{"late", "1"}}); });
  refused("tags", [&] { s.set_tag(uuid, "late", "1"); });
  refused("artifact", [&] { s.add_artifact(uuid, file, "file", "late.txt"); });
  refused("written artifact", [&] {
    s.write_artifact(uuid, "late2.txt", "file", [](std::ostream& o) { o << "late"; });
  });
  refused("heartbeat", [&] { s.heartbeat(uuid); });
  refused("final status", [&] { s.set_status(uuid, RunStatus::kFinished); });
}

// The lease, part 2: a writer paused on another host for longer than the
// stale threshold is reaped; when it goes on, it cannot write anything
// more into the run; a claim (the resume) gives the lease to the claimant.
TEST_P(StoreConformance, AWriterWhoseRunWasReapedWritesNothingMore) {
  store_ = open_as(kRemote);  // sqlite::memory: a fresh private store
  RunInfo r = new_run("paused");
  store_->append_metrics(r.uuid, {{"loss", {{1, 0, 1.0}}}});
  const double hb = store_->find_run(r.uuid)->heartbeat;
  ASSERT_EQ(store_->reap_stale_runs(hb + 31), 1);
  expect_every_write_refused(*store_, r.uuid, "was marked killed while this process",
                             write("late.txt", "late"));
  EXPECT_EQ(store_->metric(r.uuid, "loss").size(), 1u);
  EXPECT_EQ(store_->find_run(r.uuid)->status, RunStatus::kKilled);
  EXPECT_TRUE(store_->record_kinds(r.uuid).empty());
  EXPECT_TRUE(store_->artifacts(r.uuid).empty());
  EXPECT_EQ(files_named("late", dir_ / "late.txt"), 0);  // no file in the run's folder
  EXPECT_EQ(store_->tags(r.uuid).count("late"), 0u);
  // Resumed: the claim makes this store the writer again.
  store_->set_status(r.uuid, RunStatus::kRunning);
  store_->append_metrics(r.uuid, {{"loss", {{2, 0, 0.5}}}});
  store_->set_status(r.uuid, RunStatus::kFinished);
  EXPECT_EQ(store_->metric(r.uuid, "loss").size(), 2u);
  // Without a lease (a finished run) writes are not checked: eval records.
  store_->set_tag(r.uuid, "eval", "done");
}

// The lease, part 3: the run of a writer paused on another host was reaped
// and resumed by another process; when the first goes on, its writes fail
// and the new writer's records stand alone.
TEST_P(StoreConformance, AWriterWhoseRunWasTakenOverWritesNothingMore) {
  if (GetParam() == "sqlite_memory") GTEST_SKIP() << "a private store has one instance";
  auto paused = open_as(kRemote);
  RunInfo r = paused->create_run({.name = "paused"});
  paused->append_metrics(r.uuid, {{"loss", {{1, 0, 1.0}}}});
  const double hb = store_->find_run(r.uuid)->heartbeat;
  ASSERT_EQ(store_->reap_stale_runs(hb + 31), 1);
  store_->set_status(r.uuid, RunStatus::kRunning);  // the resume
  store_->append_metrics(r.uuid, {{"loss", {{2, 0, 0.5}}}});
  expect_every_write_refused(*paused, r.uuid, "was taken over by pid " + std::to_string(getpid()),
                             write("late.txt", "late"));
  // A claim by the paused writer is refused: the new writer lives.
  EXPECT_THROW(paused->set_status(r.uuid, RunStatus::kRunning), Error);
  auto now = store_->find_run(r.uuid);
  EXPECT_EQ(now->status, RunStatus::kRunning);
  EXPECT_EQ(now->pid, getpid());
  EXPECT_EQ(now->host, core::host_name());
  auto loss = store_->metric(r.uuid, "loss");
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[1].step, 2);
  EXPECT_TRUE(store_->artifacts(r.uuid).empty());
  EXPECT_EQ(files_named("late", dir_ / "late.txt"), 0);
  store_->set_status(r.uuid, RunStatus::kFinished);
  EXPECT_EQ(store_->find_run(r.uuid)->status, RunStatus::kFinished);
}

// Issue 29, item 11: deleting a study's parent run orphaned its children
// silently. It is refused unless the caller says to delete them too or to
// keep them detached.
TEST_P(StoreConformance, DeletingAParentSaysWhatBecomesOfItsChildren) {
  auto family = [&](const std::string& name) {
    RunInfo parent = new_run(name);
    std::vector<std::string> kids;
    for (int i = 0; i < 2; ++i)
      kids.push_back(
          store_->create_run({.name = name + "/r" + std::to_string(i), .parent_uuid = parent.uuid})
              .uuid);
    kids.push_back(store_->create_run({.name = name + "/r0/x", .parent_uuid = kids[0]}).uuid);
    return std::pair{parent.uuid, kids};
  };
  auto [kept, kept_kids] = family("kept");
  try {
    store_->delete_run(kept);
    FAIL() << "a parent was deleted without a word about its children";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find("has 2 child runs"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(store_->find_run(kept).has_value());
  store_->delete_run(kept, Store::ChildRuns::kDetach);
  EXPECT_FALSE(store_->find_run(kept).has_value());
  EXPECT_EQ(store_->find_run(kept_kids[0])->parent_uuid, "");
  EXPECT_EQ(store_->find_run(kept_kids[2])->parent_uuid, kept_kids[0]);
  auto [gone, gone_kids] = family("gone");
  store_->delete_run(gone, Store::ChildRuns::kDelete);
  EXPECT_FALSE(store_->find_run(gone).has_value());
  for (const auto& k : gone_kids) EXPECT_FALSE(store_->find_run(k).has_value()) << k;
  EXPECT_EQ(store_->list_runs().size(), 3u);  // the kept family's children
}

TEST_P(StoreConformance, UnknownRunsAreNotFound) {
  auto not_found = [](const std::function<void()>& f) {
    try {
      f();
      return false;
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kNotFound;
    }
  };
  Store& s = *store_;
  EXPECT_TRUE(not_found([&] { s.set_param(kNoSuchRun, "k", "v"); }));
  EXPECT_TRUE(not_found([&] { s.set_tag(kNoSuchRun, "k", "v"); }));
  EXPECT_TRUE(not_found([&] { s.set_status(kNoSuchRun, RunStatus::kFinished); }));
  EXPECT_TRUE(not_found([&] { s.append_metrics(kNoSuchRun, {{"m", {{0, 0, 1}}}}); }));
  EXPECT_TRUE(not_found([&] { s.add_artifact(kNoSuchRun, write("f", "x"), "file"); }));
  EXPECT_TRUE(not_found([&] { s.delete_run(kNoSuchRun); }));
  EXPECT_TRUE(not_found([&] { s.create_run({.parent_uuid = kNoSuchRun}); }));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance,
#ifdef TS_WITH_POSTGRES
                         ::testing::Values("sqlite_file", "sqlite_memory", "postgresql"),
#else
                         ::testing::Values("sqlite_file", "sqlite_memory"),
#endif
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace trainscope::store
