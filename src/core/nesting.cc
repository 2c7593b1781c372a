#include "trainscope/core/nesting.h"

#include "trainscope/core/error.h"

namespace trainscope::core {

namespace {

// The depth reached and the offset where it first went past `stop_at`.
struct Depth {
  int max = 0;
  size_t at = 0;
};

Depth measure(std::string_view text, int stop_at) {
  Depth d;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > d.max) d.max = depth, d.at = i;
      if (depth >= stop_at) return d;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return d;
}

}  // namespace

int json_nesting(std::string_view text, int stop_at) { return measure(text, stop_at).max; }

void check_json_nesting(std::string_view text, const std::string& what) {
  const Depth d = measure(text, kMaxNesting + 1);
  if (d.max > kMaxNesting)
    fail(ErrorKind::kUsage, "{}: nested deeper than {} levels (at byte {})", what, kMaxNesting,
         d.at + 1);
}

}  // namespace trainscope::core
