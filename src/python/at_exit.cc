#include "at_exit.h"

#include <stdlib.h>
#include <unistd.h>

#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "trainscope/core/log.h"

namespace trainscope::python {
namespace {

struct Deferred {
  pid_t pid;
  std::unique_ptr<store::RunRecorder> recorder;
  std::shared_ptr<store::Store> store;
};

// Never destroyed: the handler runs among the static destructors' turns.
std::mutex& deferred_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::vector<Deferred>& deferred() {
  static auto* list = new std::vector<Deferred>;
  return *list;
}

void end_deferred(int status, void* /*unused*/) {
  std::vector<Deferred> ending;
  {
    std::lock_guard lock(deferred_mu());
    ending.swap(deferred());
  }
  const store::RunStatus s = status == 0 ? store::RunStatus::kFinished : store::RunStatus::kFailed;
  for (Deferred& d : ending) {
    if (d.pid != ::getpid()) {  // a forked child's copy: the parent's run
      (void)d.recorder.release();
      (void)new std::shared_ptr<store::Store>(std::move(d.store));
      continue;
    }
    try {
      d.recorder->end(s);
    } catch (const std::exception& e) {
      core::log_warn("trainscope: ending run {} {}: {}", d.recorder->uuid(), store::to_string(s),
                     e.what());
    }
    d.recorder.reset();
    d.store.reset();
  }
}

}  // namespace

void end_at_exit(std::unique_ptr<store::RunRecorder> recorder,
                 std::shared_ptr<store::Store> store) {
  std::lock_guard lock(deferred_mu());
  // Registered with the first run, as late as can be: it runs before the
  // destructors of every static made until then.
  if (deferred().empty() && on_exit(end_deferred, nullptr) != 0) {
    recorder->end(store::RunStatus::kFinished);  // no handler to be had: as before
    return;
  }
  deferred().push_back({::getpid(), std::move(recorder), std::move(store)});
}

}  // namespace trainscope::python
