// What a job's process does before it runs the job, whether it is exec'd
// (local executor) or forked from a warm worker (warm_executor.cc).
#pragma once

#include <sys/types.h>

#include "trainscope/study/executor.h"

namespace trainscope::study {

// In the job's new process: dies with `parent` (SIGTERM lets the trainer
// checkpoint and stop; exits 127 when the parent is already gone), sends
// stdout and stderr to the job's log, reads stdin from /dev/null, and adds
// the job's environment.
void enter_job(const Job& job, pid_t parent);

}  // namespace trainscope::study
