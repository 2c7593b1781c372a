// Reading small kernel and system files (/proc, /sys, /etc), shared by the
// env component's sources. Internal to src/env.
#pragma once

#include <filesystem>
#include <fstream>  // for the files that include this one
#include <sstream>
#include <string>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"

namespace trainscope::env::files {

// The whole file; "" when it cannot be read or is not a regular file (a
// FIFO would block, /dev/zero never end: core::read_regular_file).
inline std::string read_text(const std::filesystem::path& p) {
  try {
    return core::read_regular_file(p, "file").value_or("");
  } catch (const core::Error&) {
    return "";
  }
}

// The first line without surrounding blanks; "" when it cannot be read.
inline std::string read_line(const std::filesystem::path& p) {
  std::string s = read_text(p);
  s = s.substr(0, s.find('\n'));
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace trainscope::env::files
