// YAML maps as dotted keys: the one reader that turns a nested mapping
// ("optimizer: {lr: 0.1}") into the keys trainscope names its settings by
// ("optimizer.lr" = "0.1"), for configs, study files and recorded configs;
// and the first key at which two such flat maps differ.
//
// Lives in core beside check_yaml (yaml_checks.h); its implementation uses
// yaml-cpp, which libtrainscope links privately (no yaml-cpp type appears
// here).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::core {

// One value of a flattened map.
struct FlatValue {
  // What the text held under the key.
  enum class Kind {
    kScalar,  // `key: value`
    kNull,    // `key:` alone, or `key: ~` / `key: null`
    kList,    // `key: [a, b]` or a block list
  };
  // The keys from the top down joined by '.': "optimizer.lr". A key is
  // taken as written (a key that holds '.' is not split); a null key is
  // "null". Empty for the value at the top itself (NotAMap::kOneValue).
  std::string key;
  Kind kind = Kind::kScalar;
  // kScalar: the scalar's text as written, without its quotes; kNull: "";
  // kList: "[" + the items joined by ", " + "]" (each item as
  // FlattenOptions::list_items says).
  std::string text;
  // kList only: some item is a map, a list or null.
  bool nested = false;
  // 1-based line of the value in the text (kNull in a map: its key's line).
  int line = 1;
};

// How a list's item that is not a scalar (a map, a list, null) shows in
// the list's FlatValue::text; either way it sets FlatValue::nested.
enum class ListItems {
  kLeaveOut,  // left out: "[1, 2]" for [1, {a: b}, 2] (configs: a list
              // key takes numbers only, and `nested` says it holds more)
  kAsYaml,    // as yaml-cpp dumps it: "[1, {a: b}, 2]", null as "~"
              // (comparing recorded configs: every difference shows)
};

// What the value to flatten (the document, or the one at `under`) gives
// when it is not a map.
enum class NotAMap {
  kRefuse,    // null or absent: no values; a scalar or a list: Error
  kOneValue,  // a scalar, a list or null: one FlatValue with the empty key;
              // absent (`under` not found): no values
};

// Which map flatten_yaml reads and how it shows lists and a value that is
// not a map; the defaults read a config file.
struct FlattenOptions {
  // The keys leading from the document to the map to flatten, e.g.
  // {"quick", "set"}; empty: the whole document. Keys of the values
  // returned start below it ("lr", not "quick.set.lr"). A key on the way
  // that is absent, or a value on the way that is not a map, counts as
  // absent.
  std::vector<std::string> under;
  ListItems list_items = ListItems::kLeaveOut;
  NotAMap not_a_map = NotAMap::kRefuse;
};

// The values of the map in `text` (YAML) as dotted keys, depth first, in the
// order the text gives them. Every scalar, null and list under the map is
// one FlatValue; a map inside the map adds its own values, and an empty
// map adds none. A list is one value: its items are not flattened. A key
// that appears twice by way of dots ("a.b: 1" beside "a: {b: 2}") appears
// twice; the caller decides which wins.
//
// Call check_yaml(text, source) first: this reader trusts that the text
// holds one document, no key twice in a mapping and bounded nesting (it
// recurses once per level).
//
// Throws Error(kUsage):
// - "SOURCE: invalid YAML at line N: WHY" for text yaml-cpp cannot read,
//   and for a key that is a list or a map (WHY: "bad conversion");
// - "SOURCE: expected a mapping of keys to values at the top level" when
//   the value to flatten (the document, or the one at `under`) is a scalar
//   or a list and options.not_a_map is kRefuse.
std::vector<FlatValue> flatten_yaml(std::string_view text, const std::string& source,
                                    const FlattenOptions& options = {});

// A key whose value differs between two flat maps (first_difference), and
// its value on each side.
struct KeyDifference {
  std::string key;
  std::optional<std::string> was;  // nullopt: `was` does not hold the key
  std::optional<std::string> now;  // nullopt: `now` does not hold the key
};

// The first key, in ascending order over the keys of both maps, whose
// value differs between `was` and `now`, or that only one of them holds
// (a key held with an empty value is held); nullopt when the two are
// equal. The caller words a missing side ("unset", "(not set)").
std::optional<KeyDifference> first_difference(const std::map<std::string, std::string>& was,
                                              const std::map<std::string, std::string>& now);

}  // namespace trainscope::core
