// Diagnostic messages on stderr, filtered by one process-wide verbosity.
// Thread-safe. Results go to stdout; log lines never do.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace trainscope::core {

// The levels of the process-wide filter: at kQuiet only lines logged at
// kQuiet (failures that must be seen) print, at kNormal info and warnings
// too, at kVerbose debug lines too.
enum class Verbosity { kQuiet = 0, kNormal = 1, kVerbose = 2 };

// Sets the one process-wide level (an atomic: any thread, any time; lines
// already being written are not affected). kNormal until set.
void set_verbosity(Verbosity v);
// The current level; any thread.
Verbosity verbosity();

// `message` as a terminal may be given it: every control character but
// the line feed and the tab escaped ("\x1b", "\r"), and a C1 control
// (U+0080..U+009F) as "\u009b" and a bidirectional control as "\u202e",
// so that no name inside a message (a run's, a key, a tag) can set the
// terminal's title, move its cursor, clear its screen or reorder the line;
// a byte that is not UTF-8 as "\\xff". Backslashes are kept: a part escaped
// already (core::escape_for_display) reads the same. A message keeps its
// line feeds: a single value inside one (a name, a folder, a tag read
// from a store) is escaped with escape_for_display, which escapes them.
// With `one_line`, the line feed and the tab are escaped too ("\n",
// "\t"): an error message is one line whatever text it embeds.
std::string terminal_text(std::string_view message, bool one_line = false);

// Writes `message` (as terminal_text(message, true) gives it: one line
// whatever text it embeds, a line feed in a path written "\n") and a
// newline to stderr when the verbosity is at least `level`; a whole line
// at a time under one lock, so lines of concurrent threads never
// interleave. A closed or full stderr drops the line (never throws for
// it; output.h).
void log_line(Verbosity level, const std::string& message);

// An info line (kNormal): formatted only when it would print.
template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (verbosity() >= Verbosity::kNormal)
    log_line(Verbosity::kNormal, fmt::format(f, std::forward<Args>(args)...));
}
// A debug line (kVerbose, -v): formatted only when it would print.
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
