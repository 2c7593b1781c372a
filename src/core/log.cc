#include "trainscope/core/log.h"

#include <atomic>
#include <mutex>

#include "trainscope/core/output.h"
#include "trainscope/core/util.h"

namespace trainscope::core {
namespace {
std::atomic<Verbosity> g_verbosity{Verbosity::kNormal};
std::mutex g_log_mu;
}  // namespace

void set_verbosity(Verbosity v) { g_verbosity.store(v); }
Verbosity verbosity() { return g_verbosity.load(std::memory_order_relaxed); }

std::string terminal_text(std::string_view message, bool one_line) {
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size();) {
    const auto c = static_cast<unsigned char>(message[i]);
    const size_t n = c < 0x80 ? 1 : utf8_sequence(message, i);
    if (c == '\r' || (one_line && (c == '\n' || c == '\t'))) {
      out += c == '\r' ? "\\r" : c == '\n' ? "\\n" : "\\t";
    } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || n == 0) {
      out += fmt::format("\\x{:02x}", c);  // a control, or a byte that is not UTF-8
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(message[i + 1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(message[i + 1]));
    } else if (n > 1 && is_bidi_control(utf8_code_point(message, i, n))) {
      // It would reorder the rest of the line: never part of a message.
      out += fmt::format("\\u{:04x}", static_cast<uint32_t>(utf8_code_point(message, i, n)));
    } else {
      out.append(message.substr(i, n));
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

void log_line(Verbosity level, const std::string& message) {
  if (verbosity() < level) return;
  const std::string line = terminal_text(message, true) + "\n";
  std::lock_guard lock(g_log_mu);
  // Through the guard (output.h): a closed or full stderr drops the line,
  // never the command.
  write_standard(StdStream::kStderr, line);
}

}  // namespace trainscope::core
