// How deep trainscope reads nested text from outside: YAML files, JSON
// documents and lines, filter expressions. Their readers recurse (yaml-cpp,
// nlohmann's copy and dump, a recursive-descent parser), so nesting from
// outside is bounded before it reaches them: deeper text is refused with a
// one-line error instead of exhausting the stack.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainscope::core {

// The deepest nesting read anywhere. Every file trainscope reads needs a
// few levels; a stack frame per level stays far from the stack's size.
inline constexpr int kMaxNesting = 64;

// The deepest nesting of JSON arrays and objects in `text`, counting no
// further than `stop_at` (so that a huge input costs one pass to reject).
// Brackets inside strings do not count; text that is not JSON is measured
// all the same (its parser then says what is wrong with it).
int json_nesting(std::string_view text, int stop_at = kMaxNesting + 1);

// Throws Error(kUsage) "WHAT: nested deeper than 64 levels (at byte N)"
// when `text` nests deeper than kMaxNesting.
void check_json_nesting(std::string_view text, const std::string& what);

}  // namespace trainscope::core
