// Output is not the run: what a process prints on stdout and stderr, and
// what became of it.
//
// A stdout or stderr that is closed (`>&-`), full (`> /dev/full`) or read
// by a program that stopped reading (`| head -1`) never ends a command nor
// loses what it records: the first write that fails is remembered (its
// errno), everything after it on that stream is dropped, and the command
// runs to its end. Whoever ends the process says so once
// (output_cut_message(); the CLI prints it and exits 2).
//
// Every write to stdout or stderr in trainscope goes through here: std::cout,
// std::cerr and std::clog once guard_standard_output() ran, core::log_*, and
// write_standard() for bytes (watch's echo of a program's output). Writes go
// through C stdio, so their order and buffering stay stdio's, but through
// trainscope's own FILEs over descriptors 1 and 2, whose buffers stdio hands
// to write_fully(): glibc's own stdout drops what a write(2) failing with
// EAGAIN did not take, and a stdout that the parent set O_NONBLOCK (a slow
// reader) is no failure, only a wait.
#pragma once

#include <string>
#include <string_view>

namespace trainscope::core {

// Which standard stream a write goes to (the values are the descriptors).
enum class StdStream { kStdout = 1, kStderr = 2 };

// Writes all of `bytes` to descriptor `fd` with write(2): a partial write
// goes on with the rest, EINTR is tried again, and EAGAIN (EWOULDBLOCK), a
// descriptor set O_NONBLOCK, possibly by another process sharing it, whose
// reader is slower than the writer, waits in poll() until it takes more.
// Returns 0 when all was written, otherwise the errno of the failure
// (EPIPE, ENOSPC, EIO, EBADF, ...). stdout and stderr (write_standard),
// output FIFOs and synced files (core's descriptor writer) and a rank's
// error line to its launcher are written with it.
int write_fully(int fd, std::string_view bytes);

// Once, first thing in main(), before any thread or child starts:
// - SIGPIPE (and SIGXFSZ, a file past `ulimit -f`) is caught by a handler
//   that does nothing, and unblocked, so a write to a pipe nobody reads
//   fails with EPIPE (EFBIG) instead of ending the process. A caught signal
//   is reset to its default by exec (an ignored one would stay ignored), so
//   every program trainscope starts (watch's command, a study's trainings,
//   tune's trials, posix_spawn'ed tools) gets SIGPIPE as a shell gives it,
//   with no change at each fork.
// - A standard descriptor (0, 1, 2) that is closed gets /dev/null, so that
//   no file trainscope opens (a store, a checkpoint, watch's capture) takes
//   its number and receives output; a write to a stdout or stderr that was
//   closed counts as failed (EBADF).
// - std::cout, std::cerr and std::clog write through write_standard(): they
//   never turn bad, so no command stops halfway because its output failed.
void guard_standard_output();

// Writes `bytes` to stdout or stderr (C stdio). False when the stream has
// failed, now or before: the bytes are dropped. Thread-safe.
bool write_standard(StdStream s, std::string_view bytes);
// Flushes the stream; false when it has failed.
bool flush_standard(StdStream s);
// The errno of the stream's first failed write (EPIPE, ENOSPC, EBADF, ...);
// 0 while none failed.
int standard_error(StdStream s);

// In a forked child that gave itself a new stdout and stderr (dup2: a
// study's job writing into its log): what failed on the parent's streams,
// or was closed there, no longer counts.
void forget_standard_failures();

// A writing command says what it recorded, for the line about a cut output
// ("...; the run lm (1a2b3c4d) was recorded in full"): a clause such as
// "the study seeds (1a2b3c4d) and its runs were recorded in full". The last
// one said is printed.
void note_recorded(std::string clause);
// The same for one run: "the run NAME (SHORT-UUID) was recorded in full".
void note_recorded_run(std::string_view name, std::string_view uuid);

// Flushes std::cout, std::cerr and both streams, then: empty when no output
// failed; otherwise the one line (without "trainscope: ") that says which
// output could not be written, why and what to do, and what was recorded
// ("cannot write the output to stdout: Broken pipe; the program reading it
// stopped before the end, so the output is cut; the run lm (1a2b3c4d) was
// recorded in full"). The same line while the process lives.
std::string output_cut_message();

// Prints output_cut_message() on stderr (when stderr still works) the first
// time it is called with an output cut; later calls print nothing. True when
// an output was cut.
bool report_output_cut();

// True when the only failure is a stdout whose reader stopped reading
// (EPIPE: `runs list | head -1`, `| grep -q`) and the command recorded
// nothing: a reading command then ends as `head` expects of it, quietly
// (the CLI exits 141, as a SIGPIPE would have ended it), and a line on
// stderr would only be noise.
bool only_a_reader_left();

// A process that shares this one's stdout and stderr (a data-parallel rank)
// said that the output was cut: report_output_cut() is true from now on and
// says nothing more.
void note_output_cut_reported();

// In a child between fork() and exec() of trainscope itself (a
// data-parallel rank; async-signal-safe): a stdout or stderr that was closed
// when this process started (it holds /dev/null since) is closed again, so
// that the child sees what this process saw and says its output was cut.
void reclose_standard_descriptors();

// In a child between fork() and exec() (async-signal-safe): SIGPIPE and
// SIGXFSZ at their defaults and the signal mask trainscope started with
// (those two unblocked), as a program started from a shell has them. exec
// resets a caught signal by itself; this also undoes an ignore a library set
// since (cpp-httplib ignores SIGPIPE) and a mask the forking thread changed.
void reset_signals_for_exec();

}  // namespace trainscope::core
