// Running a program and reading its output, shared by the env component's
// sources. Internal to src/env.
#pragma once

#include <string>
#include <vector>

namespace trainscope::env::process {

// Runs a program with these arguments (no shell: nothing in them is ever
// interpreted; found on PATH) and returns its stdout, and its stderr too when
// `with_stderr` (else discarded). `status` is its wait status, -1 when it
// could not run.
std::string capture(const std::vector<std::string>& args, int* status = nullptr,
                    bool with_stderr = false);

}  // namespace trainscope::env::process
