// Errors a user can act on.
//
// Inside trainscope, failures are reported by throwing trainscope::Error with a
// one-line message that names the input and says what to do. The CLI catches
// it once, prints "trainscope: <message>" and exits with a non-zero code.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace trainscope::core {

// Exit codes the CLI returns for each kind of error.
enum class ErrorKind {
  kUsage = 2,       // bad arguments or configuration
  kNotFound = 3,    // unknown run, key, file
  kConflict = 4,    // ambiguous reference, immutable value changed
  kStore = 5,       // the store cannot be opened, read or written
  kRuntime = 1,     // anything else
  kCommandNotFound = 127,  // `watch` of a program that does not exist (as the shell)
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kRuntime)
      : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

// Throws Error(kind) with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...), kind);
}

}  // namespace trainscope::core
