// What a job's process does before it runs the job, whether it is exec'd
// (local executor) or forked from a warm worker (warm_executor.cc).
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "trainscope/study/executor.h"

namespace trainscope::study {

// In the job's new process: dies with `parent` (SIGTERM lets the trainer
// checkpoint and stop; exits 127 when the parent is already gone), sends
// stdout and stderr to the job's log, reads stdin from /dev/null, and adds
// the job's environment.
void enter_job(const Job& job, pid_t parent);

// Makes the folder a study's logs go to (--logs, or a job's log's folder):
// one that cannot be made (a name too long, /proc, no permission) is
// refused (Error kUsage) with why, not an internal filesystem error.
void make_log_folder(const std::filesystem::path& dir);

}  // namespace trainscope::study
