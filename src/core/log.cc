#include "trainscope/core/log.h"

#include <atomic>
#include <mutex>

#include "trainscope/core/output.h"

namespace trainscope::core {
namespace {
std::atomic<Verbosity> g_verbosity{Verbosity::kNormal};
std::mutex g_log_mu;
}  // namespace

void set_verbosity(Verbosity v) { g_verbosity.store(v); }
Verbosity verbosity() { return g_verbosity.load(std::memory_order_relaxed); }

void log_line(Verbosity level, const std::string& message) {
  if (verbosity() < level) return;
  std::lock_guard lock(g_log_mu);
  // Through the guard (output.h): a closed or full stderr drops the line,
  // never the command.
  write_standard(StdStream::kStderr, message + "\n");
}

}  // namespace trainscope::core
