#include "at_exit.h"

#include <stdlib.h>
#include <unistd.h>

#include <exception>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "trainscope/core/log.h"

namespace trainscope::python {
namespace {

struct HandedOver {
  pid_t pid;
  std::unique_ptr<store::RunRecorder> recorder;
  std::shared_ptr<store::Store> store;
};

// Never destroyed: a handler may run after the static destructors.
struct Ends {
  std::mutex mu;
  std::set<EndsAtExit*> live;
  std::vector<HandedOver> handed_over;
  bool registered = false;
};
Ends& ends() {
  static auto* e = new Ends;
  return *e;
}

void end_one(HandedOver& h, store::RunStatus s) {
  if (h.pid != ::getpid()) {  // a forked child's copy: the parent's run
    (void)h.recorder.release();
    (void)new std::shared_ptr<store::Store>(std::move(h.store));
    return;
  }
  try {
    h.recorder->end(s);
  } catch (const std::exception& e) {
    core::log_warn("trainscope: ending run {} {}: {}", h.recorder->uuid(), store::to_string(s),
                   e.what());
  }
  h.recorder.reset();
  h.store.reset();
}

// The exit handler (on_exit): every run still open ends with the status.
// Registered more than once; the first to run ends them all.
void end_all(int status, void* /*unused*/) {
  // exit(256) is status 0 to the parent (POSIX keeps the low 8 bits);
  // on_exit is given the whole int.
  const store::RunStatus s =
      (status & 0xFF) == 0 ? store::RunStatus::kFinished : store::RunStatus::kFailed;
  std::vector<HandedOver> handed_over;
  std::set<EndsAtExit*> live;
  {
    std::lock_guard lock(ends().mu);
    handed_over.swap(ends().handed_over);
    live.swap(ends().live);
  }
  for (EndsAtExit* run : live) run->end_as_process_exits(s);
  for (HandedOver& h : handed_over) end_one(h, s);
}

void register_handler(bool again) {
  std::lock_guard lock(ends().mu);
  if (ends().registered && !again) return;
  ends().registered = on_exit(end_all, nullptr) == 0 || ends().registered;
}

}  // namespace

void end_at_exit(EndsAtExit* run) {
  register_handler(false);
  std::lock_guard lock(ends().mu);
  ends().live.insert(run);
}

void forget_at_exit(EndsAtExit* run) {
  std::lock_guard lock(ends().mu);
  ends().live.erase(run);
}

void end_at_exit(std::unique_ptr<store::RunRecorder> recorder,
                 std::shared_ptr<store::Store> store) {
  register_handler(false);
  std::lock_guard lock(ends().mu);
  ends().handed_over.push_back({::getpid(), std::move(recorder), std::move(store)});
}

void end_before_statics() { register_handler(true); }

}  // namespace trainscope::python
