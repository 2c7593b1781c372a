// A Python script's runs end with the process's exit status when nothing
// ended them before: a run left open whose interpreter ended with no
// failure seen (a `raise SystemExit(3)` at the top reaches no hook), one
// started in an atexit handler, one whose script called C's exit() (an
// extension's, ctypes'). glibc's on_exit is given the status: finished
// for 0, failed for any other. A process that dies by a signal or _exit
// never gets there: its run is left running, to be marked killed as any
// run whose process is gone.
#pragma once
#include <memory>

#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::python {

// A run the process's exit ends unless it ended before.
class EndsAtExit {
 public:
  // Ends it with `status` unless it has ended or is another process's.
  virtual void end_as_process_exits(store::RunStatus status) = 0;

 protected:
  ~EndsAtExit() = default;
};

// From a run's start to its destruction, the process's exit ends `run`.
// The first one registers the exit handler.
void end_at_exit(EndsAtExit* run);
void forget_at_exit(EndsAtExit* run);

// A run destroyed before it ended (its object collected as the interpreter
// ends): its recorder and store are kept to the exit and ended there. Only
// the process that handed them over ends them.
void end_at_exit(std::unique_ptr<store::RunRecorder> recorder, std::shared_ptr<store::Store> store);

// As the interpreter ends: the exit handler registered again, so that it
// runs before the destructors of every static made until now (a handler
// runs before those made before it was registered).
void end_before_statics();

}  // namespace trainscope::python
