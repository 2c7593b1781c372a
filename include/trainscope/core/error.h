// Errors a user can act on.
//
// Inside trainscope, failures are reported by throwing core::Error with a
// one-line message that names the input and says what to do, and a kind
// that says what went wrong. Whoever catches it decides what the kind means
// to its user: the CLI maps kinds to exit codes (src/cli), a web server
// would map them to HTTP statuses.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::core {

// What went wrong, for whoever catches an Error to map (the CLI to exit
// codes, the dashboard to HTTP statuses).
enum class ErrorKind {
  kRuntime,          // anything else
  kUsage,            // bad arguments or configuration
  kNotFound,         // unknown run, key, file
  kConflict,         // ambiguous reference, immutable value changed
  kStore,            // the store cannot be opened, read or written
  kCommandNotFound,  // a program to run does not exist
};

// What trainscope throws for a failure a user can act on (other exception
// types are bugs or come from libraries): what() is one line naming the
// input, kind() says what went wrong. One type across the shared libraries
// (see ~Error).
class Error : public std::runtime_error {
 public:
  // Takes `message` as what(), one line whatever text it embeds: a line
  // break, a tab, a NUL (what() is a C string: one would cut the message
  // there) or any other control written escaped ("\n", "\x00"), as
  // core::terminal_text(message, true) writes it (a path or key given with
  // a line feed cut the message or split it; twenty-sixth hunt, A-D2..D4).
  // Throws only std::bad_alloc.
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kRuntime)
      : std::runtime_error(one_line(message)), kind_(kind) {}
  // Out of line, so that the type has one home (libtrainscope) when errors
  // cross shared libraries.
  ~Error() override;
  // The kind given at construction.
  ErrorKind kind() const { return kind_; }

 private:
  static std::string one_line(std::string_view s);  // out of line: one home, as ~Error
  ErrorKind kind_;
};

// Throws Error(kind) with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...), kind);
}

// A registration that runs while a shared library loads (a unit's or a
// config section's static initializer, instrument/unit.h) must not throw
// through dlopen: while a LoadErrors is alive on a thread, the failures of
// that thread's registrations are kept in it (keep_load_error) for the
// loader to report. Not shared between threads.
class LoadErrors {
 public:
  // Starts keeping this thread's registration failures (nested: the
  // innermost keeps them).
  LoadErrors();
  // Stops keeping them here (the enclosing LoadErrors, if any, keeps them).
  ~LoadErrors();
  LoadErrors(const LoadErrors&) = delete;
  LoadErrors& operator=(const LoadErrors&) = delete;
  // The messages kept since construction (or the last take), in order.
  std::vector<std::string> take();

 private:
  LoadErrors* outer_;
  std::vector<std::string> kept_;
  friend bool keep_load_error(const std::string& message);
};

// Keeps `message` in this thread's innermost LoadErrors and returns true;
// without one, returns false and the caller throws as usual (a program's
// own registrations at start-up). Never throws but std::bad_alloc.
bool keep_load_error(const std::string& message);

}  // namespace trainscope::core
