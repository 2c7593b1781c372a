// Runs a script left open whose status only the process's exit status
// can tell (a `raise SystemExit(3)` at the top, an exit status CPython sets
// without the package seeing why): their recorders are kept past the
// interpreter's end and ended as the process exits, finished for status 0,
// failed for any other.
#pragma once
#include <memory>

#include "trainscope/store/run_recorder.h"
#include "trainscope/store/store.h"

namespace trainscope::python {

// Takes `recorder` (and the store it writes to) to end as this process
// exits (glibc's on_exit, which is given the status). A process that dies
// by a signal or _exit never gets there: its run is left running, to be
// marked killed as any run whose process is gone. Only the process that
// handed it over ends it (a forked child inherits the list, not the run).
void end_at_exit(std::unique_ptr<store::RunRecorder> recorder, std::shared_ptr<store::Store> store);

}  // namespace trainscope::python
