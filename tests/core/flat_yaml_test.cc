// core::flatten_yaml (YAML maps as dotted keys) and core::first_difference.
#include "trainscope/core/flat_yaml.h"

#include <gtest/gtest.h>

#include "trainscope/core/error.h"
#include "trainscope/core/yaml_checks.h"

namespace trainscope::core {
namespace {

using Kind = FlatValue::Kind;

// "key=text" for each value, in order.
std::vector<std::string> pairs(const std::vector<FlatValue>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.key + "=" + v.text);
  return out;
}

TEST(FlattenYamlTest, NestedMapsBecomeDottedKeysInFileOrder) {
  const auto v = flatten_yaml(
      "train:\n  epochs: 2\noptimizer:\n  name: sgd\n  schedule:\n    kind: step\n    gamma: 0.5\n"
      "seed: 7\n",
      "c.yaml");
  EXPECT_EQ(pairs(v), (std::vector<std::string>{"train.epochs=2", "optimizer.name=sgd",
                                                "optimizer.schedule.kind=step",
                                                "optimizer.schedule.gamma=0.5", "seed=7"}));
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].kind, Kind::kScalar);
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(v[3].line, 7);
}

TEST(FlattenYamlTest, ScalarsAreKeptAsWrittenWithoutQuotes) {
  const auto v = flatten_yaml("a: '0.10'\nb: \"x: y\"\nc: 1e-2\nd: yes\n", "c.yaml");
  EXPECT_EQ(pairs(v), (std::vector<std::string>{"a=0.10", "b=x: y", "c=1e-2", "d=yes"}));
}

TEST(FlattenYamlTest, NullIsEmptyOnItsKeysLine) {
  const auto v = flatten_yaml("a:\n  b:\n  c: ~\nd: null\n", "c.yaml");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(pairs(v), (std::vector<std::string>{"a.b=", "a.c=", "d="}));
  for (const auto& x : v) EXPECT_EQ(x.kind, Kind::kNull);
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(v[2].line, 4);
}

TEST(FlattenYamlTest, AnEmptyMapGivesNoValues) {
  EXPECT_TRUE(flatten_yaml("a: {}\n", "c.yaml").empty());
  EXPECT_EQ(pairs(flatten_yaml("a: {}\nb: 1\n", "c.yaml")), std::vector<std::string>{"b=1"});
  EXPECT_TRUE(flatten_yaml("{}", "c.yaml").empty());
  // An empty document (or only comments) is no map at all: no values.
  EXPECT_TRUE(flatten_yaml("", "c.yaml").empty());
  EXPECT_TRUE(flatten_yaml("# nothing\n", "c.yaml").empty());
}

TEST(FlattenYamlTest, AListIsOneValueAndItsNestedItemsAreAnOption) {
  const std::string text = "a: [1, 2]\nb:\n  - x\n  - {k: v}\n  - ~\n  - y\nc: []\n";
  const auto left_out = flatten_yaml(text, "c.yaml");
  ASSERT_EQ(left_out.size(), 3u);
  EXPECT_EQ(pairs(left_out), (std::vector<std::string>{"a=[1, 2]", "b=[x, y]", "c=[]"}));
  EXPECT_EQ(left_out[0].kind, Kind::kList);
  EXPECT_FALSE(left_out[0].nested);
  EXPECT_TRUE(left_out[1].nested);
  EXPECT_EQ(left_out[1].line, 3);
  EXPECT_FALSE(left_out[2].nested);

  const auto as_yaml = flatten_yaml(text, "c.yaml", {.list_items = ListItems::kAsYaml});
  EXPECT_EQ(pairs(as_yaml), (std::vector<std::string>{"a=[1, 2]", "b=[x, {k: v}, ~, y]", "c=[]"}));
  EXPECT_TRUE(as_yaml[1].nested);
}

TEST(FlattenYamlTest, KeysAreNotSplitAndRepeatsByWayOfDotsAreKept) {
  const auto v = flatten_yaml("a.b: 1\na:\n  b: 2\n~: 3\n", "c.yaml");
  EXPECT_EQ(pairs(v), (std::vector<std::string>{"a.b=1", "a.b=2", "null=3"}));
}

TEST(FlattenYamlTest, UnderFlattensOneMapOfTheDocument) {
  const std::string text = "set:\n  a.b: 1\n  c: {d: 2}\nquick:\n  set: {e: 3}\nx: 4\n";
  EXPECT_EQ(pairs(flatten_yaml(text, "s.yaml", {.under = {"set"}})),
            (std::vector<std::string>{"a.b=1", "c.d=2"}));
  EXPECT_EQ(pairs(flatten_yaml(text, "s.yaml", {.under = {"quick", "set"}})),
            std::vector<std::string>{"e=3"});
  // Absent, or below a value that is not a map: nothing.
  EXPECT_TRUE(flatten_yaml(text, "s.yaml", {.under = {"grid"}}).empty());
  EXPECT_TRUE(flatten_yaml(text, "s.yaml", {.under = {"x", "set"}}).empty());
  // A scalar where the map belongs.
  EXPECT_THROW(flatten_yaml(text, "s.yaml", {.under = {"x"}}), Error);
}

TEST(FlattenYamlTest, ATopThatIsNotAMapIsRefusedOrOneValue) {
  for (const char* text : {"- a\n- b\n", "just text\n"}) {
    try {
      flatten_yaml(text, "c.yaml");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_STREQ(e.what(), "c.yaml: expected a mapping of keys to values at the top level");
    }
  }
  const FlattenOptions one{.list_items = ListItems::kAsYaml, .not_a_map = NotAMap::kOneValue};
  EXPECT_EQ(pairs(flatten_yaml("- a\n- b\n", "c.yaml", one)), std::vector<std::string>{"=[a, b]"});
  EXPECT_EQ(pairs(flatten_yaml("text\n", "c.yaml", one)), std::vector<std::string>{"=text"});
  const auto empty = flatten_yaml("", "c.yaml", one);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].kind, Kind::kNull);
}

TEST(FlattenYamlTest, MalformedYamlIsAUsageErrorNamingTheSourceAndLine) {
  try {
    flatten_yaml("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
    ADD_FAILURE() << "accepted an unclosed list";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(std::string(e.what()).starts_with("bad.yaml: invalid YAML at line ")) << e.what();
  }
  // A key that is a list: yaml-cpp reads it, a dotted key cannot hold it.
  try {
    flatten_yaml("? [a, b]\n: 1\n", "bad.yaml");
    ADD_FAILURE() << "accepted a list as a key";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_STREQ(e.what(), "bad.yaml: invalid YAML at line 1: bad conversion");
  }
}

// Twenty-ninth hunt, A-D3: `!!binary` and `!!python/object:...` sit under
// yaml.org's prefix and were taken, their text read as if untagged.
TEST(CheckYamlTest, OnlyTheCoreSchemasTagsAreTaken) {
  for (const char* ok : {"a: !!str 3\n", "a: !!int 3\n", "a: !!float 3\n", "a: !!bool true\n",
                         "a: !!null\n", "a: !!map {b: 1}\n", "a: !!seq [1]\n", "a: '3'\n"})
    EXPECT_NO_THROW(check_yaml(ok, "c.yaml")) << ok;
  const std::pair<const char*, const char*> refused[] = {
      {"a: 1\nb: !!binary aGVsbG8=\n",
       "c.yaml: line 2: tag '!!binary' is not one of YAML's core schema (!!str, !!int, !!float, "
       "!!bool, !!null, !!map, !!seq) and would be ignored; remove it"},
      {"a: !!python/object:os.system {b: 1}\n",
       "c.yaml: line 1: tag '!!python/object:os.system' is not one of YAML's core schema (!!str, "
       "!!int, !!float, !!bool, !!null, !!map, !!seq) and would be ignored; remove it"},
      {"a: !!timestamp 2001-12-14\n", "c.yaml: line 1: tag '!!timestamp' is not one of"},
      {"a: !!set {x}\n", "c.yaml: line 1: tag '!!set' is not one of"},
      {"!!binary k: 1\n", "c.yaml: line 1: tag '!!binary' is not one of"},
      {"a: !custom 1\n",
       "c.yaml: line 1: tag '!custom' is not supported and would be ignored; remove it"},
  };
  for (const auto& [text, message] : refused) {
    try {
      check_yaml(text, "c.yaml");
      ADD_FAILURE() << "took " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_TRUE(std::string(e.what()).starts_with(message)) << e.what();
    }
  }
}

TEST(FirstDifferenceTest, TheFirstKeyInOrderThatDiffersOrOnlyOneSideHolds) {
  using Flat = std::map<std::string, std::string>;
  EXPECT_FALSE(first_difference({}, {}));
  EXPECT_FALSE(first_difference(Flat{{"a", "1"}}, Flat{{"a", "1"}}));

  auto d = first_difference(Flat{{"a", "1"}, {"b", "2"}, {"c", "3"}},
                            Flat{{"a", "1"}, {"b", "20"}, {"c", "30"}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "b");
  EXPECT_EQ(d->was, "2");
  EXPECT_EQ(d->now, "20");

  d = first_difference(Flat{{"b", "2"}}, Flat{{"a", "1"}, {"b", "2"}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "a");
  EXPECT_FALSE(d->was);
  EXPECT_EQ(d->now, "1");

  d = first_difference(Flat{{"a", "1"}, {"z", ""}}, Flat{{"a", "1"}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "z");
  EXPECT_EQ(d->was, "");  // held and empty is not absent
  EXPECT_FALSE(d->now);
}

}  // namespace
}  // namespace trainscope::core
