// `store copy`: every record of every run arrives bit for bit, a copy cut
// short resumes, and the CLI verifies what it copied; from SQLite into
// SQLite, and into PostgreSQL and back (the destination is the parameter).
#include "trainscope/store/copy.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
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
namespace {

namespace tst = trainscope::testing;

class StoreCopyTest : public ::testing::TestWithParam<std::string> {
 protected:
  // "dst.db" and "b.db" are stores of the backend under test; the others
  // SQLite files.
  std::string uri(const std::string& name) {
    if (GetParam() == "postgresql" && (name == "dst.db" || name == "b.db")) {
      if (!pg_uris_.count(name))
        pg_uris_[name] = tst::fresh_postgres_store(dir_ / (name + "-artifacts"));
      return pg_uris_[name];
    }
    return "sqlite:" + (dir_ / name).string();
  }
  std::unique_ptr<Store> open(const std::string& name) { return Store::open({.uri = uri(name)}); }

  // A study run with two children, and a run holding a record of every kind.
  std::vector<std::string> fill(Store& s) {
    auto study = s.create_run({.experiment = "st", .name = "study", .config_text = "a: 1\n"});
    s.set_tag(study.uuid, "kind", "study");
    std::vector<std::string> uuids{study.uuid};
    for (int i = 0; i < 2; ++i) {
      auto child = s.create_run({.experiment = "st", .parent_uuid = study.uuid});
      s.append_metrics(child.uuid, {{"test/accuracy", {{1, 2.5, 0.5 + i}}}});
      s.set_status(child.uuid, RunStatus::kFinished);
      uuids.push_back(child.uuid);
    }
    auto full = s.create_run({.name = "full", .command_line = "trainscope train x.yaml"});
    std::vector<MetricPoint> many;
    for (int i = 0; i < 250'000; ++i) many.push_back({i, 1e9 + i, i == 3 ? NAN : std::sin(i)});
    s.append_metrics(full.uuid, {{"train/loss", many}, {"lr", {{0, 1, INFINITY}}}});
    s.set_params(full.uuid, {{"optimizer.lr", "0.1"}, {"seeds.master", "3"}});
    s.set_tag(full.uuid, "note", "caf\xe9");
    s.set_environment(full.uuid, {{"hardware.cpu", "EPYC"}, {"threads.torch", "2"}});
    // Every capability's records, as the capabilities encode them, and a
    // kind no capability of ours writes.
    s.append_records(full.uuid, fingerprint::kNamesKind,
                     {fingerprint::names_record({"w", "loss"})});
    s.append_records(
        full.uuid, fingerprint::kStepsKind,
        {fingerprint::step_record({1, {11, 12}}), fingerprint::step_record({2, {21, 22}})});
    s.append_records(full.uuid, profile::kStepsKind,
                     profile::cell_records({{1, "conv1", "forward", 12.5}, {1, "", "other", 3}}));
    s.append_records(full.uuid, profile::kLayersKind,
                     {profile::layers_record({{"conv1", "{\"type\":\"Conv2d\"}"}})});
    probes::Histogram h{-1, 1, {1, 2, 3}, 1, 0, 2};
    s.append_records(full.uuid, probes::kHistogramsKind,
                     {probes::histogram_record({"conv1/weights", 4, 5.0, h})});
    s.append_records(full.uuid, probes::kEventsKind,
                     {probes::event_record({4, 5.0, "alert", "lr_too_high", "conv1", "too high"})});
    s.append_records(full.uuid, "users.own", {{"k\xff", -3, 0, std::string("\0\x01", 2)}});
    std::ofstream(dir_ / "ckpt.pt", std::ios::binary) << std::string(70'000, '\x7f');
    s.add_artifact(full.uuid, dir_ / "ckpt.pt", "checkpoint", "checkpoints/step-1.pt");
    s.set_status(full.uuid, RunStatus::kFailed);
    uuids.push_back(full.uuid);
    return uuids;
  }

  tst::TempDir dir_;
  std::map<std::string, std::string> pg_uris_;
};

TEST_P(StoreCopyTest, EveryRecordArrivesBitForBit) {
  auto src = open("src.db");
  const auto uuids = fill(*src);
  auto dst = open("dst.db");
  const CopyResult r = copy_store(*src, *dst);
  EXPECT_EQ(r.copied, 4u);
  EXPECT_EQ(r.points, 250'000 + 1 + 2);
  EXPECT_EQ(r.artifacts, 1);
  for (const auto& u : uuids) EXPECT_EQ(compare_run(*src, *dst, u), "") << u;
  // The comparison itself sees a difference.
  dst->set_tag(uuids.back(), "note", "changed");
  EXPECT_EQ(compare_run(*src, *dst, uuids.back()), "tags differ");
  // And the copy is a real store: the child still names its study.
  EXPECT_EQ(dst->find_run(uuids[1])->parent_uuid, uuids[0]);
  EXPECT_TRUE(std::isnan(dst->metric(uuids.back(), "train/loss")[3].value));
  // The capabilities read their records from the copy.
  EXPECT_EQ(fingerprint::read(*dst, uuids.back()).steps.at(1).hashes,
            (std::vector<uint64_t>{21, 22}));
  EXPECT_EQ(profile::read_cells(*dst, uuids.back()).size(), 2u);
  EXPECT_EQ(probes::read_events(*dst, uuids.back()).at(0).message, "too high");
  EXPECT_EQ(dst->record_kinds(uuids.back()).size(), 7u);
  verify_artifact(dst->artifacts(uuids.back())[0]);
  EXPECT_NE(dst->artifacts(uuids.back())[0].path, src->artifacts(uuids.back())[0].path);
}

TEST_P(StoreCopyTest, ACopyCutShortResumes) {
  auto src = open("src.db");
  const auto uuids = fill(*src);
  auto dst = open("dst.db");
  // As an interrupted copy leaves it: the study whole, `full` half made.
  dst->import_run(*src->find_run(uuids[0]));
  dst->set_tag(uuids[0], "kind", "study");
  dst->import_run(*src->find_run(uuids.back()));
  dst->set_params(uuids.back(), src->params(uuids.back()));
  const CopyResult r = copy_store(*src, *dst);
  EXPECT_EQ(r.skipped, 1u);
  EXPECT_EQ(r.recopied, 1u);
  EXPECT_EQ(r.copied, 2u);
  for (const auto& u : uuids) EXPECT_EQ(compare_run(*src, *dst, u), "") << u;
  const CopyResult again = copy_store(*src, *dst);
  EXPECT_EQ(again.skipped, 4u);
  EXPECT_EQ(again.copied + again.recopied, 0u);
  EXPECT_THROW(dst->import_run(*src->find_run(uuids[0])), core::Error);
}

// Twenty-ninth hunt, A-D2: a cut fingerprints record was copied and called
// verified, while diff and rerun --verify refuse it. A record a capability's
// check refuses stops the copy before that run is written, as a damaged
// artifact does.
TEST_P(StoreCopyTest, ARecordNoReaderCanReadIsNotCopied) {
  auto src = open("src.db");
  fill(*src);
  for (const auto& [kind, payload] :
       {std::pair{fingerprint::kStepsKind, std::string("\x01\x02\x03")},
        std::pair{probes::kHistogramsKind, std::string("\x00\x01")}}) {
    auto cut = src->create_run({.name = "cut"});
    src->append_records(cut.uuid, fingerprint::kNamesKind, {fingerprint::names_record({"w"})});
    src->append_records(cut.uuid, kind, {{"conv1/weights", 1, 0, payload}});
    src->set_status(cut.uuid, RunStatus::kFinished);
    auto dst = open(std::string("dst-") + kind + ".db");
    try {
      copy_store(*src, *dst);
      ADD_FAILURE() << "a " << kind << " record no reader can read was copied";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kStore);
      EXPECT_NE(std::string(e.what()).find(std::string(kind) + " record"), std::string::npos)
          << e.what();
      // Runs without a parent first: the study and `full` were copied.
      EXPECT_NE(std::string(e.what()).find("was not copied, 2 run(s) before it were"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(dst->find_run(cut.uuid)) << kind;
    EXPECT_EQ(dst->list_runs().size(), 2u) << kind;
    src->delete_run(cut.uuid, Store::ChildRuns::kDetach);
  }
}

// Issue 29, item 11: a run left "running" by a writer that is gone was
// marked killed in the destination and its 567,647 points copied again on
// every pass. It is copied as it is, once; when a writer of the
// destination marks it killed later, a copy does not copy it again.
TEST_P(StoreCopyTest, AStaleRunningRunIsCopiedAsItIsOnce) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  const int64_t start = core::process_start_ticks(child);
  waitpid(child, nullptr, 0);  // the writer is gone
  std::string uuid;
  {
    auto src = Store::open(
        {.uri = uri("src.db"), .writer = WriterIdentity{core::host_name(), child, start}});
    auto r = src->create_run({.name = "crashed"});
    std::vector<MetricPoint> pts;
    for (int i = 0; i < 50'000; ++i) pts.push_back({i, 1e9 + i, 1.0 / (i + 1)});
    src->append_metrics(r.uuid, {{"train/loss", pts}});
    uuid = r.uuid;
  }
  auto src = Store::open({.uri = uri("src.db"), .read_only = true});
  const std::string copy = std::string(TS_CLI_BIN) + " store copy " +
                           tst::shell_quote(uri("src.db")) + " " + tst::shell_quote(uri("dst.db"));
  auto first = tst::run_command(copy);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("copied 1 runs (50000 metric points"), std::string::npos) << first.out;
  auto again = tst::run_command(copy);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("copied 0 runs (0 metric points, 0 artifacts)"), std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("1 already there, 0 copied again"), std::string::npos) << again.out;
  EXPECT_EQ(Store::open({.uri = uri("dst.db"), .read_only = true})->find_run(uuid)->status,
            RunStatus::kRunning);  // as it is
  // A writer of the destination judges it: its process is gone.
  EXPECT_EQ(open("dst.db")->find_run(uuid)->status, RunStatus::kKilled);
  auto third = tst::run_command(copy);
  ASSERT_EQ(third.exit_code, 0) << third.out;
  EXPECT_NE(third.out.find("1 already there, 0 copied again"), std::string::npos) << third.out;
  EXPECT_NE(third.out.find("verified"), std::string::npos) << third.out;
  EXPECT_EQ(src->find_run(uuid)->status, RunStatus::kRunning);  // the source is only read
}

TEST_P(StoreCopyTest, TheCliCopiesBothWaysAndVerifies) {
  {
    auto src = open("a.db");
    fill(*src);
  }
  const std::string ts = std::string(TS_CLI_BIN) + " -q store copy ";
  auto there =
      tst::run_command(ts + tst::shell_quote(uri("a.db")) + " " + tst::shell_quote(uri("b.db")));
  ASSERT_EQ(there.exit_code, 0) << there.out;
  EXPECT_NE(there.out.find("copied 4 runs"), std::string::npos) << there.out;
  EXPECT_NE(there.out.find("verified: every run reads back equal"), std::string::npos);
  auto back =
      tst::run_command(ts + tst::shell_quote(uri("b.db")) + " " + tst::shell_quote(uri("c.db")));
  ASSERT_EQ(back.exit_code, 0) << back.out;
  auto a = open("a.db"), b = open("b.db"), c = open("c.db");
  ASSERT_EQ(a->list_runs().size(), 4u);
  for (const auto& run : a->list_runs()) {
    EXPECT_EQ(compare_run(*a, *b, run.uuid), "");
    EXPECT_EQ(compare_run(*a, *c, run.uuid), "");
  }
  auto missing = tst::run_command(ts + "sqlite:" + (dir_ / "none.db").string() +
                                  " sqlite:" + (dir_ / "d.db").string());
  EXPECT_EQ(missing.exit_code, 3) << missing.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "d.db"));
}

#ifdef TS_WITH_POSTGRES
INSTANTIATE_TEST_SUITE_P(Into, StoreCopyTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& p) { return p.param; });
#else
INSTANTIATE_TEST_SUITE_P(Into, StoreCopyTest, ::testing::Values("sqlite"),
                         [](const auto& p) { return p.param; });
#endif

}  // namespace
}  // namespace trainscope::store
