// Reading small kernel and system files (/proc, /sys, /etc), shared by the
// env component's sources. Internal to src/env.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace trainscope::env::files {

// The whole file; "" when it cannot be read.
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
