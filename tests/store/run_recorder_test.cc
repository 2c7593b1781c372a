#include "trainscope/store/run_recorder.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include "support/sqlite_check.h"
#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::store {
using core::Error;
using core::monotonic_now;

namespace {

using testing::TempDir;

std::shared_ptr<Store> open_at(const std::filesystem::path& p) {
  StoreOptions o;
  o.uri = "sqlite:" + p.string();
  return Store::open(o);
}

// Waits until pred() holds; liveness only, the bound is generous.
template <typename Pred>
bool eventually(Pred pred, double seconds = 20) {
  double end = monotonic_now() + seconds;
  while (monotonic_now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST(RunRecorderTest, LogsEverythingAndFinishes) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  NewRun nr;
  nr.name = "rec";
  std::string uuid;
  {
    auto rec = RunRecorder::start(store, nr);
    uuid = rec->uuid();
    EXPECT_EQ(store->find_run(uuid)->status, RunStatus::kRunning);
    rec->set_param("lr", "0.1");
    rec->set_tag("phase", "test");
    for (int i = 0; i < 5000; ++i) {
      rec->log_metric("loss", 1.0 / (i + 1), i);
      if (i % 10 == 0) rec->log_metric("acc", i * 1e-4, i);
    }
    rec->flush();
    EXPECT_EQ(store->metric(uuid, "loss").size(), 5000u);
    rec->log_metric("loss", 0.0, 5000);
  }  // destructor: flush + finished
  auto r = store->find_run(uuid);
  EXPECT_EQ(r->status, RunStatus::kFinished);
  auto loss = store->metric(uuid, "loss");
  ASSERT_EQ(loss.size(), 5001u);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(loss[i].value, 1.0 / (i + 1));
  EXPECT_EQ(store->metric(uuid, "acc").size(), 500u);
  EXPECT_EQ(store->params(uuid).at("lr"), "0.1");
}

// What a data-parallel rank > 0 trains with (issue 47): nothing it logs
// is kept, so its memory stays flat; what a unit reads back of its own run
// (params, tags) is there.
TEST(RunRecorderTest, AnUnrecordedRecorderKeepsNoPointAndNoRecord) {
  auto r = RunRecorder::unrecorded({.experiment = "e", .name = "rank1"});
  EXPECT_FALSE(r->recording());
  for (int64_t step = 0; step < 100000; ++step) {
    r->log_metric("loss", 1.0 / static_cast<double>(step + 1), step);
    r->log_record("fingerprints", {"", step, 0, std::string(64, 'x')});
  }
  EXPECT_THROW(r->log_record("Not A Kind", {}), Error);  // the same rule as a recording one
  r->set_tag("t", "v");
  r->set_params({{"optimizer.lr", "0.1"}});
  r->flush();
  EXPECT_EQ(r->stats().points_logged, 0);
  EXPECT_EQ(r->stats().points_flushed, 0);
  EXPECT_TRUE(r->store().metric_summaries(r->uuid()).empty());
  EXPECT_TRUE(r->store().record_kinds(r->uuid()).empty());
  EXPECT_EQ(r->store().tags(r->uuid()).at("t"), "v");
  EXPECT_EQ(r->store().params(r->uuid()).at("optimizer.lr"), "0.1");
  r->end();
  EXPECT_EQ(r->store().find_run(r->uuid())->status, RunStatus::kFinished);
  auto recording = RunRecorder::start(Store::open({.uri = "sqlite::memory:"}), {.name = "r0"});
  EXPECT_TRUE(recording->recording());
}

TEST(RunRecorderTest, WriterFlushesWithoutBeingAsked) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  auto rec = RunRecorder::start(store, {});
  rec->log_metric("x", 42, 0);
  EXPECT_TRUE(eventually([&] { return store->metric(rec->uuid(), "x").size() == 1; }));
  // The writer counts a flush after its commit, which readers may see first.
  EXPECT_TRUE(eventually([&] { return rec->stats().flushes >= 1; }));
}

TEST(RunRecorderTest, HeartbeatAdvances) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  RecorderOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(50);
  auto rec = RunRecorder::start(store, {}, o);
  double first = store->find_run(rec->uuid())->heartbeat;
  EXPECT_TRUE(eventually([&] { return store->find_run(rec->uuid())->heartbeat > first; }));
}

TEST(RunRecorderTest, UnwindingMarksTheRunFailed) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  std::string uuid;
  try {
    auto rec = RunRecorder::start(store, {});
    uuid = rec->uuid();
    rec->log_metric("loss", std::nan(""), 3);
    throw std::runtime_error("training blew up");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(store->find_run(uuid)->status, RunStatus::kFailed);
  auto loss = store->metric(uuid, "loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(std::isnan(loss[0].value));
}

TEST(RunRecorderTest, AttachResumesAStoppedRun) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  std::string uuid;
  {
    auto rec = RunRecorder::start(store, {});
    uuid = rec->uuid();
    rec->log_metric("loss", 1, 0);
    rec->end(RunStatus::kStopped);
  }
  EXPECT_EQ(store->find_run(uuid)->status, RunStatus::kStopped);
  {
    auto rec = RunRecorder::attach(store, uuid);
    EXPECT_EQ(store->find_run(uuid)->status, RunStatus::kRunning);
    rec->log_metric("loss", 0.5, 1);
  }
  EXPECT_EQ(store->metric(uuid, "loss").size(), 2u);
  EXPECT_EQ(store->find_run(uuid)->status, RunStatus::kFinished);
}

TEST(RunRecorderTest, ConcurrentLoggersFromManyThreads) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  auto rec = RunRecorder::start(store, {});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) rec->log_metric("k" + std::to_string(t), i, i);
    });
  for (auto& th : threads) th.join();
  rec->end();
  for (int t = 0; t < 4; ++t) {
    auto pts = store->metric(rec->uuid(), "k" + std::to_string(t));
    ASSERT_EQ(pts.size(), 20000u);
    for (int i = 0; i < 20000; ++i) ASSERT_EQ(pts[i].step, i);  // order kept per key
  }
}

// Disk full during a flush: a real 1 MiB tmpfs fills up. The error is
// reported, points stay in memory, and what was committed stays readable.
// Reliability defect 8: a run deleted while it trains made its writer fail
// with a FOREIGN KEY error, retried forever. Now it says the run was
// deleted, records nothing more, and ends without touching the store.
TEST(RunRecorderTest, ARunDeletedWhileRunningIsReportedOnce) {
  TempDir dir;
  auto store = open_at(dir / "t.db");
  auto rec = RunRecorder::start(store, NewRun{});
  rec->log_metric("loss", 1.0, 1);
  rec->flush();
  open_at(dir / "t.db")->delete_run(rec->uuid());  // another process deletes it
  rec->log_metric("loss", 0.5, 2);
  try {
    rec->flush();
    FAIL() << "flush of a deleted run succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("was deleted"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(rec->deleted());
  rec->log_metric("loss", 0.25, 3);  // dropped, no error
  EXPECT_NO_THROW(rec->end());
  EXPECT_FALSE(store->find_run(rec->uuid()).has_value());  // not re-created
}

// Issue 29, item 3: a recorder whose run was reaped (its process paused on
// another host) and resumed elsewhere reports it once, writes nothing more
// and ends with LeaseLost instead of a final status.
TEST(RunRecorderTest, ALostLeaseIsReportedOnceAndNothingMoreIsWritten) {
  TempDir dir;
  const std::string uri = "sqlite:" + (dir / "t.db").string();
  std::shared_ptr<Store> paused =
      Store::open({.uri = uri, .writer = WriterIdentity{"other-host", 4242, 1}});
  auto rec = RunRecorder::start(paused, NewRun{});
  rec->log_metric("loss", 1.0, 1);
  rec->flush();
  auto here = Store::open({.uri = uri});
  ASSERT_EQ(here->reap_stale_runs(here->now() + 31), 1);
  here->set_status(rec->uuid(), RunStatus::kRunning);  // resumed by this process
  ::testing::internal::CaptureStderr();
  rec->log_metric("loss", 0.5, 2);
  try {
    rec->flush();
    ADD_FAILURE() << "a recorder without its lease flushed";
  } catch (const LeaseLost& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kConflict);
    EXPECT_NE(std::string(e.what()).find("was taken over by pid"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(rec->lease_lost());
  EXPECT_THROW(rec->check(), LeaseLost);
  rec->log_metric("loss", 0.25, 3);  // dropped
  EXPECT_THROW(rec->set_tag("late", "1"), LeaseLost);
  EXPECT_THROW(rec->end(), LeaseLost);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_NE(said.find("records nothing more of the run"), std::string::npos) << said;
  EXPECT_EQ(here->metric(rec->uuid(), "loss").size(), 1u);
  EXPECT_EQ(here->find_run(rec->uuid())->status, RunStatus::kRunning);  // the new writer's
  EXPECT_EQ(here->tags(rec->uuid()).count("late"), 0u);
}

TEST(RunRecorderTest, DiskFullIsReportedAndNothingCommittedIsLost) {
  TempDir dir;
  auto mnt = dir / "small";
  std::filesystem::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << std::strerror(errno) << "); needs root";
  struct Unmount {
    std::filesystem::path p;
    ~Unmount() { umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt};

  std::string uuid;
  size_t committed = 0;
  {
    auto store = open_at(mnt / "t.db");
    auto rec = RunRecorder::start(store, {});
    uuid = rec->uuid();
    for (int i = 0; i < 1000; ++i) rec->log_metric("loss", i, i);
    rec->flush();
    committed = store->metric(uuid, "loss").size();
    ASSERT_EQ(committed, 1000u);
    // ~4.8 MB of points cannot fit in 1 MiB.
    for (int i = 0; i < 200000; ++i) rec->log_metric("loss", i, 1000 + i);
    try {
      rec->flush();
      FAIL() << "flush into a full disk must fail";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_TRUE(msg.find("full") != std::string::npos || msg.find("I/O") != std::string::npos)
          << msg;
    }
    EXPECT_GE(rec->stats().failed_flushes, 1);
    EXPECT_THROW(rec->end(RunStatus::kFinished), Error);
  }
  // Reopen: the store is consistent and the committed points are there.
  auto store = open_at(mnt / "t.db");
  auto pts = store->metric(uuid, "loss");
  EXPECT_EQ(pts.size(), committed);
  EXPECT_EQ(testing::sqlite_integrity(mnt / "t.db"), "ok");
}

}  // namespace
}  // namespace trainscope::store
