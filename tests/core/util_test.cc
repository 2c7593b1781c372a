// core::edit_distance, with and without a limit.
#include "trainscope/core/util.h"

#include <gtest/gtest.h>

namespace trainscope::core {
namespace {

TEST(EditDistanceTest, ExactBelowTheLimitAndCappedAbove) {
  EXPECT_EQ(edit_distance("trian", "train"), 2u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting", 3), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting", 2), 3u);  // limit + 1
  EXPECT_EQ(edit_distance("a-very-long-garbage-key", "lr", 2), 3u);
  EXPECT_EQ(edit_distance("optimizer.nam", "optimizer.name", 1), 1u);
}

}  // namespace
}  // namespace trainscope::core
