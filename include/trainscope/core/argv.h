// A command's words: the char* array exec*() and posix_spawn() take, and
// a word as a POSIX shell reads it back (a command printed for a user to
// run again).
#pragma once

#include <string>
#include <string_view>
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

// `text` as one word of a POSIX shell: as it is when every character is
// one a shell gives no meaning to, else in single quotes ('\'' for a quote).
inline std::string shell_quote(std::string_view text) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-./=:,@%+").find(c) != std::string_view::npos;
  };
  bool all_plain = !text.empty();
  for (char c : text) all_plain = all_plain && plain(c);
  if (all_plain) return std::string(text);
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Words joined into one shell command line, each quoted as it needs.
inline std::string shell_command(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
  return out;
}

}  // namespace trainscope::core
