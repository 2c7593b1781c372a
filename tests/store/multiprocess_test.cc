// Several processes writing to one store, and a writer killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "support/sqlite_check.h"
#include "support/test_util.h"
#include "trainscope/store/store.h"

namespace trainscope::store {
namespace {

using testing::TempDir;

pid_t spawn_writer(const std::string& store, const std::string& name, long points, int keys,
                   bool hang, int stdout_fd = -1) {
  pid_t pid = fork();
  if (pid == 0) {
    if (stdout_fd >= 0) dup2(stdout_fd, 1);
    std::string p = std::to_string(points), k = std::to_string(keys);
    if (hang) {
      execl(TS_WRITER_BIN, TS_WRITER_BIN, store.c_str(), name.c_str(), p.c_str(), k.c_str(),
            "--hang", static_cast<char*>(nullptr));
    } else {
      execl(TS_WRITER_BIN, TS_WRITER_BIN, store.c_str(), name.c_str(), p.c_str(), k.c_str(),
            static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  return pid;
}

TEST(MultiProcessTest, EightWritersAtOnceLoseNothing) {
  TempDir dir;
  const std::string uri = "sqlite:" + (dir / "t.db").string();
  constexpr int kWriters = 8;
  constexpr long kPoints = 50000;
  constexpr int kKeys = 3;
  // All writers start together on a store that does not exist yet, so they
  // also race to create and migrate it.
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w)
    pids.push_back(spawn_writer(uri, "w" + std::to_string(w), kPoints, kKeys, false));
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a writer failed; see its stderr above";
  }
  StoreOptions o;
  o.uri = uri;
  auto store = Store::open(o);
  auto runs = store->list_runs();
  ASSERT_EQ(runs.size(), static_cast<size_t>(kWriters));
  std::set<std::string> names;
  for (const auto& r : runs) {
    names.insert(r.name);
    EXPECT_EQ(r.status, RunStatus::kFinished);
    EXPECT_EQ(store->params(r.uuid).at("writer"), r.name);
    for (int k = 0; k < kKeys; ++k) {
      auto pts = store->metric(r.uuid, "key" + std::to_string(k));
      ASSERT_EQ(pts.size(), static_cast<size_t>(kPoints)) << r.name << " key" << k;
      for (long i = 0; i < kPoints; ++i) ASSERT_EQ(pts[i].step, i);
    }
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kWriters));
}

TEST(MultiProcessTest, SigkilledWriterLosesNothingFlushedAndBecomesKilled) {
  TempDir dir;
  const std::string uri = "sqlite:" + (dir / "t.db").string();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = spawn_writer(uri, "victim", 5000, 2, true, fds[1]);
  close(fds[1]);
  FILE* in = fdopen(fds[0], "r");
  char uuid[64] = {0};
  long flushed = 0;
  ASSERT_EQ(std::fscanf(in, "flushed %63s %ld", uuid, &flushed), 2);
  // Let it keep writing (and committing) for a while, then kill it mid-stream.
  usleep(700 * 1000);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  fclose(in);
  ASSERT_TRUE(WIFSIGNALED(status));

  StoreOptions o;
  o.uri = uri;
  auto store = Store::open(o);  // reaps: the writer's process is gone
  auto r = store->find_run(uuid);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, RunStatus::kKilled);
  for (int k = 0; k < 2; ++k) {
    auto pts = store->metric(uuid, "key" + std::to_string(k));
    ASSERT_GE(pts.size(), static_cast<size_t>(flushed));
    for (size_t i = 0; i < pts.size(); ++i) ASSERT_EQ(pts[i].step, static_cast<int64_t>(i));
  }
  // The database file is intact.
  EXPECT_EQ(testing::sqlite_integrity(dir / "t.db"), "ok");
}

}  // namespace
}  // namespace trainscope::store
