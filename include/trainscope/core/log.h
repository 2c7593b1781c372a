// Diagnostic messages on stderr, filtered by one process-wide verbosity.
// Thread-safe. Results go to stdout; log lines never do.
#pragma once

#include <fmt/format.h>

#include <string>

namespace trainscope::core {

enum class Verbosity { kQuiet = 0, kNormal = 1, kVerbose = 2 };

void set_verbosity(Verbosity v);
Verbosity verbosity();

void log_line(Verbosity level, const std::string& message);

template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (verbosity() >= Verbosity::kNormal)
    log_line(Verbosity::kNormal, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (verbosity() >= Verbosity::kVerbose)
    log_line(Verbosity::kVerbose, fmt::format(f, std::forward<Args>(args)...));
}
// Warnings print unless --quiet.
template <typename... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  if (verbosity() >= Verbosity::kNormal)
    log_line(Verbosity::kNormal, "warning: " + fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace trainscope::core
