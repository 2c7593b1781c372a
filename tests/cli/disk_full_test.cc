// Reliability defect 9: `watch` on a nearly full disk. A small tmpfs holds
// the store; a filler file leaves `free_kib` free; the watched program
// prints 20,000 metric lines.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/store/query.h"
#include "trainscope/store/store.h"

namespace trainscope {
namespace {
using testing::run_command;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mnt_ = dir_ / "small";
    std::filesystem::create_directories(mnt_);
    if (mount("tmpfs", mnt_.c_str(), "tmpfs", 0, "size=4m") != 0)
      GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "); needs root";
    mounted_ = true;
    std::ofstream(dir_ / "gen.py")
        << "import time\nfor i in range(20000):\n"
           "    print(f'trainscope: step={i} loss={1.0/(i+1)} acc={i/20000}', flush=i % 500 == 0)\n"
           "    if i % 4000 == 0: time.sleep(0.3)\n";
  }
  void TearDown() override {
    if (mounted_) umount2(mnt_.c_str(), MNT_DETACH);
  }
  std::string ts(const std::string& args) {
    return std::string(TS_CLI_BIN) + " --store sqlite:" + (mnt_ / "s.db").string() + " " + args;
  }
  // Fills the tmpfs so that `free_kib` remain.
  void leave_free(long free_kib) {
    struct statvfs v {};
    ASSERT_EQ(statvfs(mnt_.c_str(), &v), 0);
    const long avail = static_cast<long>(v.f_bavail * v.f_frsize / 1024);
    ASSERT_GT(avail, free_kib);
    std::ofstream f(mnt_ / "filler", std::ios::binary);
    const std::string block(1024, 'x');
    for (long i = 0; i < avail - free_kib; ++i) f << block;
  }
  store::RunInfo only_run() {
    auto s = store::Store::open({.uri = "sqlite:" + (mnt_ / "s.db").string(), .read_only = true});
    auto runs = s->list_runs({.name = "w"});
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? store::RunInfo{} : runs[0];
  }
  testing::TempDir dir_;
  std::filesystem::path mnt_;
  bool mounted_ = false;
};

TEST_F(DiskFullTest, AWatchedRunKeepsWhatFitsAndEndsFailed) {
  ASSERT_EQ(run_command(ts("numerics logmap --steps 5 --name first")).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(mnt_ / "s.db-reserve"));
  leave_free(1024);
  auto r = run_command(ts("watch --name w -- python3 " + (dir_ / "gen.py").string()));
  EXPECT_EQ(r.exit_code, 5) << r.out;  // a store error, named
  EXPECT_NE(r.out.find("the disk is full"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("database or disk is full failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("disk is full: free space"), std::string::npos) << r.out;  // once, not twice
  std::filesystem::remove(mnt_ / "filler");                                       // room to read
  store::RunInfo w = only_run();
  EXPECT_EQ(w.status, store::RunStatus::kFailed) << store::to_string(w.status);
  auto s = store::Store::open({.uri = "sqlite:" + (mnt_ / "s.db").string(), .read_only = true});
  const auto loss = s->metric(w.uuid, "loss");
  EXPECT_GT(loss.size(), 1000u) << "what fitted was committed";
  for (size_t i = 0; i < loss.size(); ++i) ASSERT_EQ(loss[i].step, static_cast<int64_t>(i));
}

TEST_F(DiskFullTest, AlmostNoRoomLeavesNoRunRunning) {
  ASSERT_EQ(run_command(ts("numerics logmap --steps 5 --name first")).exit_code, 0);
  leave_free(60);
  auto r = run_command(ts("watch --name w -- python3 " + (dir_ / "gen.py").string()));
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("the disk is full"), std::string::npos) << r.out;
  std::filesystem::remove(mnt_ / "filler");
  auto s = store::Store::open({.uri = "sqlite:" + (mnt_ / "s.db").string(), .read_only = true});
  for (const auto& run : s->list_runs())
    EXPECT_NE(run.status, store::RunStatus::kRunning) << run.name << " left running";
  auto runs = s->list_runs({.name = "w"});
  if (!runs.empty()) {
    EXPECT_EQ(runs[0].status, store::RunStatus::kFailed);
  }
}

// Issue 29, item 12: a filter of 30,000 nested parentheses crashed `runs
// list` (exit 139, no message): parentheses and `not` nest at most 64
// levels, and chains of `and`/`or` do not nest at all.
TEST(FilterTest, NestingIsBoundedAndLongChainsAreFlat) {
  auto refused = [](const std::string& f) {
    try {
      store::RunFilterExpr::parse(f);
    } catch (const core::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string deep = std::string(30000, '(') + "name = 'a'" + std::string(30000, ')');
  EXPECT_EQ(refused(deep),
            "filter column 65: parentheses and 'not' nest deeper than 64 levels (see `trainscope "
            "runs list --help`)");
  std::string nots;
  for (int i = 0; i < 30000; ++i) nots += "not ";
  EXPECT_NE(refused(nots + "name = 'a'").find("nest deeper than 64 levels"), std::string::npos);
  EXPECT_EQ(refused(std::string(64, '(') + "name = 'a'" + std::string(64, ')')), "");
  // A million conditions joined by `or`: one node, evaluated and destroyed
  // without a level of recursion each.
  std::string chain = "name = 'r0'";
  for (int i = 1; i < 1000000; ++i) chain += " or name = 'r" + std::to_string(i) + "'";
  const auto expr = store::RunFilterExpr::parse(chain);
  store::RunRow row;
  row.info.name = "r999999";
  EXPECT_TRUE(expr.matches(row));
  row.info.name = "nobody";
  EXPECT_FALSE(expr.matches(row));
}

TEST(FilterTest, RunsListRefusesADeepFilterInOneLine) {
  testing::TempDir dir;
  const std::string ts = std::string(TS_CLI_BIN) + " --store sqlite:" + (dir / "t.db").string();
  ASSERT_EQ(run_command(ts + " numerics logmap --steps 5 --name a").exit_code, 0);
  const std::string deep = std::string(30000, '(') + "name = 'a'" + std::string(30000, ')');
  auto r = run_command(ts + " runs list --filter \"" + deep + "\"");
  EXPECT_EQ(r.exit_code, 2) << r.out.substr(0, 300);
  EXPECT_EQ(r.out,
            "trainscope: filter column 65: parentheses and 'not' nest deeper than 64 levels (see "
            "`trainscope runs list --help`)\n");
}

// Issue 29, item 8: stores named clearly. An empty name silently meant
// ./trainscope.db (a `watch` recorded there), a FIFO hung `runs list`
// forever, /dev/null's advice did not apply, a malformed PostgreSQL port
// was a store error (5). Each is now a usage error (2) at once, in one line.
TEST(StoreNameTest, EmptyOrNonFileStoresAreRefusedAtOnce) {
  testing::TempDir dir;
  const std::string cd = "cd " + dir.path().string() + " && ";
  const std::string ts = std::string(TS_CLI_BIN);
  ASSERT_EQ(mkfifo((dir / "fifo.db").c_str(), 0600), 0);
  std::filesystem::create_directories(dir / "folder.db");
  std::ofstream(dir / "wal.db");  // a store whose -wal file is a FIFO
  ASSERT_EQ(mkfifo((dir / "wal.db-wal").c_str(), 0600), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--store '' watch -- true", "--store '' names no store; give sqlite:PATH"},
      {"--store '' runs list", "--store '' names no store; give sqlite:PATH"},
      {"--store sqlite:fifo.db runs list",
       "store 'sqlite:fifo.db': 'fifo.db' is a FIFO (named pipe), not a database file"},
      {"--store sqlite:fifo.db numerics logmap --steps 3",
       "store 'sqlite:fifo.db': 'fifo.db' is a FIFO (named pipe), not a database file"},
      {"--store sqlite:wal.db runs list",
       "store 'sqlite:wal.db': 'wal.db-wal' is a FIFO (named pipe), not a database file"},
      {"--store sqlite:/dev/null runs list",
       "store 'sqlite:/dev/null': '/dev/null' is a character device, not a database file; give "
       "the path of a file (created if missing), such as sqlite:./trainscope.db"},
      {"--store sqlite:folder.db runs list",
       "store 'sqlite:folder.db' is a folder; give a database file in it, such as "
       "'folder.db/trainscope.db'"},
      {"--store postgresql://u@localhost:abc/db runs list",
       "store 'postgresql://u@localhost:abc/db': port 'abc' is not a number in 1..65535"},
      {"--store postgresql://u:pw@h1:5432,h2:70000/db runs list",
       "store 'postgresql://u@h1:5432,h2:70000/db': port '70000' is not a number in 1..65535"},
      {"--store 'postgresql://u@[::1]:x/db' runs list", "port 'x' is not a number in 1..65535"},
      {"--store 'postgresql://u@h/db?sslmode=disable&port=5x' runs list",
       "port '5x' is not a number in 1..65535"},
  };
  for (const auto& [args, want] : cases) {
    auto r = run_command(cd + "timeout 20 " + ts + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("trainscope: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  auto r = run_command(cd + "TRAINSCOPE_STORE= " + ts + " watch -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out,
            "trainscope: TRAINSCOPE_STORE is set but empty; unset it for sqlite:./trainscope.db, "
            "or set it to sqlite:PATH or postgresql://USER@HOST:PORT/DB\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "trainscope.db")) << "nothing went to the default";
  // An empty variable beside --store is not in the way, and neither is it
  // for a command that opens no store.
  r = run_command(cd + "TRAINSCOPE_STORE= " + ts +
                  " --store sqlite:s.db numerics logmap --steps 3");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(run_command("TRAINSCOPE_STORE= " + ts + " --version").exit_code, 0);
}

}  // namespace
}  // namespace trainscope
