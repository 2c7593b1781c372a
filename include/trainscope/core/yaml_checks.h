// What YAML that trainscope reads (configs, study files) must not hold.
// yaml-cpp accepts each of these and then ignores or mishandles it
// silently: a mapping's key given twice (one value is lost), a second
// document after `---` (dropped by YAML::Load), nesting deep enough to
// exhaust a recursive reader, aliases that multiply a small file into
// millions of values, and tags outside YAML's core schema (`!!binary`,
// `!python/object:...`), which no reader honours. Every reader of a YAML
// file calls check_yaml() on its text before it parses it.
//
// Lives in core so that train (configs) and study (study files) share it;
// its implementation uses yaml-cpp, which libtrainscope links privately
// (no yaml-cpp type appears here).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainscope::core {

// The most values (mapping entries and list items, an alias counting once
// per use) a YAML file may hold: trainscope's files hold hundreds.
inline constexpr size_t kMaxYamlValues = 100000;

// Throws Error(kUsage) with one line "SOURCE: line N: ..." (N 1-based)
// naming the first of: text that is not YAML ("invalid YAML at line N"), a
// second document that holds anything, a key given twice in one mapping,
// nesting deeper than kMaxNesting levels (nesting.h), more than
// kMaxYamlValues values, a tag other than none or the core schema's
// (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq). Returns when none
// holds.
void check_yaml(std::string_view text, const std::string& source);

}  // namespace trainscope::core
