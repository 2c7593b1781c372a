// Reliability defect 9: `watch` on a nearly full disk. A small tmpfs holds
// the store; a filler file leaves `free_kib` free; the watched program
// prints 20,000 metric lines.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cstring>
#include <fstream>

#include "support/test_util.h"
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

}  // namespace
}  // namespace trainscope
