// The one rule of what a run accepts (store/accept.h), and the CLI's
// key=value items (--param, --tag, TRAINSCOPE_TAGS) that ask it.
#include "trainscope/store/accept.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "trainscope/core/error.h"
#include "trainscope/store/run_env.h"

namespace trainscope::store {
namespace {

const std::string kRule = "; a key is 1 to 256 bytes without control characters, not only blanks";

TEST(AcceptTest, AKeyIsOneTo256BytesWithoutControlCharactersNotOnlyBlanks) {
  for (const std::string& good :
       {std::string("loss"), std::string("train/loss"), std::string(" a "), std::string(256, 'k'),
        std::string("\xc3\xa9t\xc3\xa9"), std::string("\xff\xfe")})  // bytes, as the store keeps
    EXPECT_EQ(key_problem(good), std::nullopt) << good;
  EXPECT_EQ(key_problem(""), "is empty");
  EXPECT_EQ(key_problem(std::string(257, 'k')), "is longer than 256 bytes");
  EXPECT_EQ(key_problem(std::string("k\0", 2)), "holds a control character");
  EXPECT_EQ(key_problem("a\nb"), "holds a control character");
  EXPECT_EQ(key_problem("a\x7f"), "holds a control character");
  EXPECT_EQ(key_problem("\t"), "holds a control character");
  EXPECT_EQ(key_problem("   "), "is only blanks");
}

TEST(AcceptTest, EachKindNamesItselfAndTheKey) {
  EXPECT_EQ(metric_key_problem(""), "metric key '' is empty" + kRule);
  EXPECT_EQ(tag_key_problem(std::string("k\0", 2)),
            "tag key 'k\\x00' holds a control character" + kRule);
  EXPECT_EQ(param_key_problem(" "), "param ' ' is only blanks" + kRule);
  EXPECT_EQ(metric_key_problem(std::string(300, 'k')),
            "metric key '" + std::string(64, 'k') + "...' is longer than 256 bytes" + kRule);
  EXPECT_EQ(metric_key_problem("loss"), std::nullopt);
  EXPECT_EQ(param_value_problem("lr", std::string(4096, 'v')), std::nullopt);
  EXPECT_EQ(param_value_problem("lr", std::string(4097, 'v')),
            "the value of param 'lr' is longer than 4096 bytes");
  EXPECT_EQ(tag_value_problem("note", std::string(4097, 'v')),
            "the value of tag 'note' is longer than 4096 bytes");
}

TEST(AcceptTest, AStepIsAnIntegerFromZeroTo2To53) {
  for (int64_t good : {int64_t{0}, int64_t{1}, kMaxStep})
    EXPECT_EQ(step_problem(good), std::nullopt);
  EXPECT_EQ(step_problem(int64_t{-1}), "step -1 is not an integer from 0 to 2^53");
  EXPECT_EQ(step_problem(kMaxStep + 1), "step 9007199254740993 is not an integer from 0 to 2^53");
  EXPECT_EQ(step_problem(4.0), std::nullopt);
  EXPECT_EQ(step_problem(9007199254740992.0), std::nullopt);
  EXPECT_EQ(step_problem(1.5), "step 1.5 is not an integer from 0 to 2^53");
  EXPECT_EQ(step_problem(-3.0), "step -3 is not an integer from 0 to 2^53");
  EXPECT_EQ(step_problem(1e30), "step 1e+30 is not an integer from 0 to 2^53");
  EXPECT_NE(step_problem(std::nan("")), std::nullopt);
  EXPECT_NE(step_problem(std::numeric_limits<double>::infinity()), std::nullopt);
  EXPECT_EQ(step_refusal("'x'"), "step 'x' is not an integer from 0 to 2^53");
}

// The CLI's --param, --tag and TRAINSCOPE_TAGS items: the same rule, the
// message naming the option.
TEST(AcceptTest, KeyValueItemsOfTheCliFollowTheRule) {
  auto message = [](std::string_view item, std::string_view what) {
    try {
      parse_key_value(item, what, "--tag team=vision");
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("team=vision", "--tag"), "accepted");
  EXPECT_EQ(message("team=", "--tag"), "accepted");
  EXPECT_EQ(message("=1", "--tag"), "--tag: '=1' is not key=value; e.g. --tag team=vision");
  EXPECT_EQ(message(" =1", "--tag"), "--tag: key ' ' is only blanks" + kRule);
  EXPECT_EQ(message("a\tb=1", "--param"), "--param: key 'a\\tb' holds a control character" + kRule);
  EXPECT_EQ(message(std::string(257, 'k') + "=1", "--param"),
            "--param: key '" + std::string(64, 'k') + "...' is longer than 256 bytes" + kRule);
  EXPECT_EQ(message("note=" + std::string(4097, 'v'), "--tag"),
            "--tag: the value of key 'note' is longer than 4096 bytes");
}

}  // namespace
}  // namespace trainscope::store
