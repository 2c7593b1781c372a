// The keeper: a process between `trainscope watch` and its program that
// holds the program's whole tree, so that nothing of it outlives watch,
// even a watch killed by SIGKILL (which no handler of its own sees).
//
//   watch ─ keeper (a child subreaper) ─ program ─ what it starts ...
//
// What the program starts and leaves behind is re-parented to the keeper,
// never to init. While watch lives, it decides (end_left_behind in
// watch.cc): the keeper only reaps and reports the program's end. When
// watch's end of the life pipe closes (watch is done with it, or died),
// the keeper ends every process below it: SIGTERM, then SIGKILL after
// 5 s; then it exits. Internal to monitor (watch.cc).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace trainscope::monitor::detail {

// A program started under a keeper.
struct Kept {
  pid_t keeper = -1;   // watch's child
  pid_t program = -1;  // the keeper's child
  int status_fd = -1;  // the program's wait status arrives here (an int)
  int life_fd = -1;    // closed: the keeper ends what is below it and exits
};

// Starts the keeper and, under it, `exe` with `argv` and `envp` (made
// before: nothing after the fork allocates), stdout and stderr on
// `out_fd` and `err_fd` (the write ends of watch's pipes, which the keeper
// then closes). The program gets SIGTERM when the keeper dies, and its
// signals as this process had them when it called (the keeper ignores
// SIGINT, SIGTERM and SIGHUP: watch passes them on to the program).
// Throws core::Error (kRuntime) when a process cannot be started.
Kept start_kept(const std::string& exe, std::vector<char*>& argv, std::vector<char*>& envp,
                int out_fd, int err_fd);

// The program's exit, read from `k.status_fd` (EINTR retried): its wait
// status; nullopt when the keeper ended without saying (it was killed: the
// program then got SIGTERM and is this process's child, watch.cc).
std::optional<int> wait_kept(const Kept& k);

// Lets the keeper end (what is left below it, then itself) and reaps it.
void release_kept(Kept& k);

}  // namespace trainscope::monitor::detail
