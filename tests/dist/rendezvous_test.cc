// Where a rank finds the others, from the environment (dist/rendezvous.h).
#include "trainscope/dist/rendezvous.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "trainscope/core/error.h"

namespace trainscope::dist {
namespace {

TEST(FirstSlurmHostTest, TakesTheFirstNameOfAListOrRange) {
  EXPECT_EQ(first_slurm_host("node7"), "node7");
  EXPECT_EQ(first_slurm_host("gpu[07-09,12],cpu1"), "gpu07");
  EXPECT_EQ(first_slurm_host("gpu[12,07-09]"), "gpu12");
  EXPECT_EQ(first_slurm_host("a1,b[2-3]"), "a1");
  EXPECT_THROW(first_slurm_host("gpu[07-09"), core::Error);
  EXPECT_THROW(first_slurm_host("gpu[]"), core::Error);
  EXPECT_THROW(first_slurm_host(""), core::Error);
}

class RendezvousEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v :
         {kRankVar, kSizeVar, kAddrVar, kPortVar, kLauncherVar, kLocalSizeVar, "SLURM_PROCID",
          "SLURM_NTASKS", "SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST", "SLURM_JOB_ID",
          "SLURM_STEP_TASKS_PER_NODE", "SLURM_LOCALID", kLocalRankVar})
      unsetenv(v);
  }
};

TEST_F(RendezvousEnvTest, NoVariablesIsNotARank) { EXPECT_FALSE(rendezvous_from_env(2)); }

TEST_F(RendezvousEnvTest, TheLauncherHostsTheStoreAndRankZeroOtherwise) {
  setenv(kRankVar, "0", 1);
  setenv(kSizeVar, "2", 1);
  setenv(kPortVar, "29500", 1);
  auto r = rendezvous_from_env(2);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->host_store);
  EXPECT_EQ(r->source, "environment");
  EXPECT_EQ(r->addr, "127.0.0.1");
  EXPECT_EQ(r->local_size, 1);
  setenv(kLauncherVar, "1", 1);
  r = rendezvous_from_env(2);
  EXPECT_FALSE(r->host_store);
  EXPECT_EQ(r->source, "launcher");
  EXPECT_EQ(r->local_size, 2);
  EXPECT_EQ(r->local_rank, 0);
}

TEST_F(RendezvousEnvTest, SlurmTasksAreRanksWhenThereAreAsManyAsTheConfigSays) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "4", 1);
  setenv("SLURM_JOB_NODELIST", "n[03-04]", 1);
  setenv("SLURM_JOB_ID", "1234567", 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)", 1);
  EXPECT_FALSE(rendezvous_from_env(1));  // not data-parallel: Slurm's tasks are not ranks
  auto r = rendezvous_from_env(4);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->size, 4);
  EXPECT_EQ(r->addr, "n03");
  EXPECT_EQ(r->port, 15000 + 4567);
  EXPECT_EQ(r->local_size, 2);
  EXPECT_EQ(r->local_rank, 0);
  EXPECT_FALSE(r->host_store);
  EXPECT_EQ(r->source, "slurm");
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_EQ(rendezvous_from_env(4)->local_rank, 1);
  setenv(kPortVar, "29400", 1);
  EXPECT_EQ(rendezvous_from_env(4)->port, 29400);
  EXPECT_THROW(rendezvous_from_env(2), core::Error);  // 4 tasks for 2 ranks
  setenv("SLURM_NTASKS", "1", 1);
  setenv("SLURM_PROCID", "0", 1);
  EXPECT_FALSE(rendezvous_from_env(4));  // one task: it launches the ranks
}

}  // namespace
}  // namespace trainscope::dist
