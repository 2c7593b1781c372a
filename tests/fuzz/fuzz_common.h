// What every fuzz target holds a reader of outside bytes to: it returns, or
// it throws core::Error with a one-line message. Any other exception, a
// crash, a leak or undefined behaviour (ASan + UBSan) is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "trainscope/core/error.h"

namespace trainscope::fuzz {

template <typename F>
void expect_clean(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const core::Error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) {  // one line, always
      std::fprintf(stderr, "error message of more than one line:\n%s\n", e.what());
      std::abort();
    }
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits the input at its first NUL: two documents from one input.
inline std::pair<std::string_view, std::string_view> split(std::string_view s) {
  const size_t at = s.find('\0');
  if (at == std::string_view::npos) return {s, {}};
  return {s.substr(0, at), s.substr(at + 1)};
}

}  // namespace trainscope::fuzz
