// The char* array exec*() and posix_spawn() take.
#pragma once

#include <string>
#include <vector>

namespace trainscope::core {

// Pointers into `args`, null-terminated; `args` must outlive the result.
// exec*() does not write through them (POSIX: the const is missing for C's
// sake), so the const_cast is safe.
inline std::vector<char*> exec_argv(const std::vector<std::string>& args) {
  std::vector<char*> out;
  out.reserve(args.size() + 1);
  for (const auto& a : args) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace trainscope::core
