// Text from a store, a file or another machine put into Markdown (a Model
// Card, a study report): it stays text. A run named "x\n## Results\n<img
// src=x onerror=...>" or a metric key holding "|" cannot add a section,
// break a table or become HTML that a Markdown viewer renders.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "trainscope/core/util.h"

namespace trainscope::core {

// The most bytes of one value a table or a document shows: the longest
// param or tag value any writer records. A longer one (planted in a store:
// thirtieth hunt, A-D9, a 50 MB tag printed whole) is cut, saying its size;
// JSON and CSV give values whole.
inline constexpr size_t kShownValueBytes = 4096;

// `s` as escape_for_display shows it, cut after kShownValueBytes with
// "... (N bytes)".
inline std::string escape_shown(std::string_view s) {
  if (s.size() <= kShownValueBytes) return escape_for_display(s);
  return escape_cut(s, kShownValueBytes) + " (" + std::to_string(s.size()) + " bytes)";
}

// One line of literal Markdown text (a table cell, a list item, a
// heading): control characters escaped as escape_for_display does ("\n"
// becomes the two characters \n), then every character Markdown or inline
// HTML gives a meaning to escaped with a backslash.
inline std::string markdown_text(std::string_view s) {
  std::string out;
  for (char c : escape_shown(s)) {
    if (std::string_view("\\`*_[]<>|#!~&").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// A Markdown code span holding `s` literally on one line: fenced by one
// backtick more than the longest run of backticks inside, padded with a
// space where `s` starts or ends with one (CommonMark's rule).
inline std::string markdown_code(std::string_view s) {
  const std::string text = escape_shown(s);
  size_t longest = 0, run = 0;
  for (char c : text) longest = std::max(longest, run = c == '`' ? run + 1 : 0);
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return fence + (pad ? " " : "") + text + (pad ? " " : "") + fence;
}

}  // namespace trainscope::core
