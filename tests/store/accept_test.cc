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

const std::string kRule =
    "; a key is 1 to 256 bytes of UTF-8 text without control characters, not only blanks";

TEST(AcceptTest, AKeyIsOneTo256BytesWithoutControlCharactersNotOnlyBlanks) {
  for (const std::string& good :
       {std::string("loss"), std::string("train/loss"), std::string(" a "), std::string(256, 'k'),
        std::string("\xc3\xa9t\xc3\xa9"), std::string("a\xc2\240b"),  // U+00A0 is no control
        std::string("a\xe2\x80\250b"), std::string("\xf0\x9f\x98\x80")})
    EXPECT_EQ(key_problem(good), std::nullopt) << good;
  EXPECT_EQ(key_problem(""), "is empty");
  EXPECT_EQ(key_problem(std::string(257, 'k')), "is longer than 256 bytes");
  EXPECT_EQ(key_problem(std::string("k\0", 2)), "holds a control character");
  EXPECT_EQ(key_problem("a\nb"), "holds a control character");
  EXPECT_EQ(key_problem("a\x7f"), "holds a control character");
  EXPECT_EQ(key_problem("\t"), "holds a control character");
  EXPECT_EQ(key_problem("   "), "is only blanks");
}

// Issue 51 (third hunt, D8): the C1 controls U+0080..U+009F (C2 80..C2 9F
// in UTF-8) are control characters as C0's are: NEL breaks a line, CSI
// starts a terminal's escape sequence.
TEST(AcceptTest, C1ControlsAreControlCharacters) {
  for (const std::string& c1 : {std::string("a\xc2\205b"), std::string("a\xc2\233b"),
                                std::string("\xc2\x80"), std::string("x\xc2\x9f")})
    EXPECT_EQ(key_problem(c1), "holds a control character") << c1;
  EXPECT_EQ(tag_key_problem("a\xc2\233b"), "tag key 'a\\u009bb' holds a control character" + kRule);
  EXPECT_EQ(run_name_problem("--name", "a\xc2\205b"),
            "--name 'a\\u0085b' holds a control character; " + std::string(kNameRule));
  EXPECT_EQ(experiment_problem("experiment", "\xc2\x90"),
            "experiment '\\u0090' holds a control character; " + std::string(kNameRule));
}

// Issue 51 (ninth hunt, D10): blanks are Unicode's, and a bidirectional
// control (which reorders the line a key is printed on) is a control
// character, in every key and name.
TEST(AcceptTest, UnicodeBlanksAndBidirectionalControlsFollowTheRule) {
  for (const std::string& blank :
       {std::string("\xc2\xa0"), std::string("\xe3\x80\x80"), std::string("\xe2\x80\x8b"),
        std::string("\xef\xbb\xbf"), std::string(" \xc2\xa0 \xe2\x80\x83")})
    EXPECT_EQ(key_problem(blank), "is only blanks") << blank;
  // Tenth hunt (D6): what draws as nothing is blank too (Unicode's
  // Default_Ignorable_Code_Point): U+200C, U+200D, U+3164, U+00AD, U+FE0F,
  // U+2800, U+115F, U+FFA0, U+034F, U+2064, U+E0020.
  for (const char* blank :
       {"\xe2\x80\x8c", "\xe2\x80\x8d", "\xe3\x85\xa4", "\xc2\xad", "\xef\xb8\x8f", "\xe2\xa0\x80",
        "\xe1\x85\x9f", "\xef\xbe\xa0", "\xcd\x8f", "\xe2\x81\xa4", "\xf3\xa0\x80\xa0",
        "\xe2\x80\x8d\xe3\x85\xa4 "})
    EXPECT_EQ(key_problem(blank), "is only blanks") << blank;
  // An emoji joined by U+200D is text.
  EXPECT_EQ(key_problem("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9"), std::nullopt);
  for (const std::string& bidi :
       {std::string("a\xe2\x80\xae"
                    "evil"),
        std::string("\xe2\x81\xa6x"), std::string("x\xe2\x80\x8f"), std::string("\xd8\x9cx")})
    EXPECT_EQ(key_problem(bidi), "holds a control character") << bidi;
  EXPECT_EQ(run_name_problem("--name",
                             "a\xe2\x80\xae"
                             "b"),
            "--name 'a\\u202eb' holds a control character; " + std::string(kNameRule));
  EXPECT_EQ(key_problem("a\xc2\xa0"
                        "b"),
            std::nullopt);  // a blank among text is text
}

// Issue 51 (ninth hunt, D4): an artifact name has a rule, whatever the
// entry point.
TEST(AcceptTest, ArtifactNamesHaveARule) {
  for (const std::string& good : {std::string("model.pt"), std::string("a/b/c.txt"),
                                  std::string(240, 'n'), std::string("\xc3\xa9.txt")})
    EXPECT_EQ(artifact_name_problem(good), std::nullopt) << good;
  EXPECT_EQ(artifact_name_problem(""), "is empty");
  EXPECT_EQ(artifact_name_problem("z\x1b[2J"), "holds a control character");
  EXPECT_EQ(artifact_name_problem("n\nl"), "holds a control character");
  EXPECT_EQ(artifact_name_problem(std::string(241, 'y')), "has a part longer than 240 bytes");
  EXPECT_EQ(artifact_name_problem(std::string(240, 'y')), std::nullopt);
  EXPECT_EQ(artifact_name_problem(" "), "has a part that is only blanks");
  EXPECT_EQ(artifact_name_problem("a/\xe3\x80\x80/b"), "has a part that is only blanks");
  EXPECT_EQ(artifact_name_problem("a/\xe2\x80\x8d"), "has a part that is only blanks");
  EXPECT_EQ(artifact_name_problem("a b/c"), std::nullopt);
  EXPECT_EQ(artifact_name_problem(std::string(5000, 'x')), "is longer than 1024 bytes");
  EXPECT_EQ(artifact_name_problem("/etc/passwd"), "is an absolute path");
  EXPECT_EQ(artifact_name_problem("a/../b"), "has a '.' or '..' part");
  EXPECT_EQ(artifact_name_problem("f\xffo"), "is not UTF-8 text");
  // Eleventh hunt, B-D1: a name ending in '/' was taken.
  for (const char* empty_part : {"dir/", "a//b", "a/b//"})
    EXPECT_EQ(artifact_name_problem(empty_part), "has an empty part (a '/' at its end or '//')")
        << empty_part;
}

// Issue 51 (third hunt, D9): a key or a name that is not UTF-8 could only
// come back as U+FFFD (JSON, the API, Python), a name no reference
// matches; refused, and shown with its bytes escaped.
TEST(AcceptTest, BytesThatAreNotUtf8AreRefused) {
  for (const std::string& bad :
       {std::string("a\377b"), std::string("\xff\xfe"), std::string("caf\xe9"),
        std::string("\xc3("), std::string("\xc0\x80"),  // a broken pair, an overlong NUL
        std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),  // a surrogate, > U+10FFFF
        std::string("ok\xe2\x82")})                                    // cut short
    EXPECT_EQ(key_problem(bad), "is not UTF-8 text") << bad;
  EXPECT_EQ(metric_key_problem("a\377b"), "metric key 'a\\xffb' is not UTF-8 text" + kRule);
  EXPECT_EQ(run_name_problem("--name", "a\377b"),
            "--name 'a\\xffb' is not UTF-8 text; " + std::string(kNameRule));
  EXPECT_EQ(run_name_problem("run name", ""), std::nullopt);  // a run without a name
}

// The key shown in a message is cut at a character's start, never inside.
TEST(AcceptTest, AShownKeyIsCutAtACharactersStart) {
  std::string e_acute;
  for (int i = 0; i < 129; ++i) e_acute += "\xc3\xa9";
  std::string first32;
  for (int i = 0; i < 32; ++i) first32 += "\xc3\xa9";
  EXPECT_EQ(shown_key(e_acute), first32 + "...");
  EXPECT_EQ(shown_key("x" + e_acute), "x" + first32.substr(0, 62) + "...");
}

// A name derived from a folder or a command is one the rule accepts.
TEST(AcceptTest, ADerivedNameIsOneTheRuleAccepts) {
  EXPECT_EQ(derived_name("a\nb\xc2\205c\xff", "run"), "a_b_c\xef\xbf\xbd");
  EXPECT_EQ(derived_name("  ", "run"), "run");
  EXPECT_EQ(derived_name("\xc2\x9b", "run"), "_");
  std::string long_name;
  for (int i = 0; i < 200; ++i) long_name += "\xc3\xa9";
  const std::string d = derived_name(long_name, "run");
  EXPECT_EQ(d.size(), 240u);
  EXPECT_EQ(run_name_problem("name", d), std::nullopt);
  EXPECT_EQ(run_name_problem("name", derived_name(std::string(300, '\xff'), "run")), std::nullopt);
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

// Issue 51 (fifth hunt, D3): a key's steps only go forward, one rule that
// Python, `watch`'s metric lines and `import tfevents` all ask; the same
// step again is taken, and each key keeps its own order.
TEST(AcceptTest, AKeysStepsOnlyGoForward) {
  StepOrder order;
  EXPECT_EQ(order.last("loss"), std::nullopt);
  EXPECT_EQ(order.problem("loss", 5), std::nullopt);  // a first step may be any
  order.take("loss", 5);
  EXPECT_EQ(order.last("loss"), 5);
  EXPECT_EQ(order.problem("loss", 5), std::nullopt);  // the same step again
  EXPECT_EQ(order.problem("loss", 6), std::nullopt);
  EXPECT_EQ(order.problem("loss", 3),
            "metric 'loss' at step 3 goes back: it was logged at step 5 before; steps of a key "
            "only go forward");
  EXPECT_EQ(order.problem("acc", 0), std::nullopt);  // another key, its own order
  order.take("acc", 0);
  order.take("loss", kMaxStep);
  EXPECT_NE(order.problem("loss", kMaxStep - 1), std::nullopt);
  EXPECT_EQ(order.last("acc"), 0);
  order.take("seen", 2);
  order.take("seen", 1);  // take() never lowers the step a key reached
  EXPECT_EQ(order.last("seen"), 2);
  // The key is shown escaped, as every refusal shows one.
  order.take("e\x1b[2J", 9);
  EXPECT_EQ(order.problem("e\x1b[2J", 1),
            "metric 'e\\x1b[2J' at step 1 goes back: it was logged at step 9 before; steps of a "
            "key only go forward");
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

// Issue 51 (seventh hunt, D4): the tags trainscope records itself and acts
// on are not a user's to set or delete: a study child's study.superseded_by
// or a run's kind=study made every study reader tell a false story.
TEST(AcceptTest, TrainscopesOwnTagsAreRefusedToUsers) {
  for (const char* own : {"kind", "exit_code", "resumed_from", "study.superseded_by",
                          "study.gave_up", "watch.command", "dist.world_size", "import.sha256",
                          "metric_lines.parsed", "energy.cpu.source"}) {
    const auto why = own_tag_problem(own);
    ASSERT_TRUE(why) << own;
    EXPECT_NE(why->find("is one trainscope records itself"), std::string::npos) << *why;
    EXPECT_EQ(tag_key_problem(own), why) << own;
  }
  for (const char* mine : {"team", "kinds", "studying", "study", "source", "watcher.x", "model",
                           "data.file.x"})  // what TrainerInputs.data_tags gives a script
    EXPECT_EQ(own_tag_problem(mine), std::nullopt) << mine;
}

// Issue 51, tenth hunt (A-D1, A-D7): a record's key is held to the rule's
// blanks too (an empty one is a run's one record of its kind); an
// artifact kind trainscope reads is not one a user logs.
TEST(AcceptTest, RecordKeysOfBlanksAndOwnArtifactKindsAreRefused) {
  EXPECT_EQ(record_problem("drift", " ", 0), "record key ' ' of kind drift is only blanks");
  EXPECT_EQ(record_problem("drift", "\xe3\x80\x80", 0),
            "record key '\xe3\x80\x80' of kind drift is only blanks");
  EXPECT_EQ(record_problem("drift", "", 0), std::nullopt);
  EXPECT_EQ(record_problem("drift", "fc1.weight", 0), std::nullopt);
  for (const char* own : {"trace", "checkpoint", "predictions", "code"})
    EXPECT_NE(own_artifact_kind_problem(own), std::nullopt) << own;
  for (const char* mine : {"file", "plot", "tracer", "checkpoints", "prediction", "codes"})
    EXPECT_EQ(own_artifact_kind_problem(mine), std::nullopt) << mine;
}

}  // namespace
}  // namespace trainscope::store
