// Opening the files a command reads (configs, study files, dataset files,
// cache entries, checkpoints, state dicts, event files, ...) so that a path
// that is not a regular file is refused at once: a FIFO with no writer
// blocks open() forever (SIGTERM caught by a training does not end it), a
// FIFO whose writer never closes blocks read(), /dev/zero never ends and a
// socket fails with a message that does not say why. Every reader of a file
// from outside opens it through open_regular_file or read_regular_file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::core {

// What a path that is not a regular file is, for messages: "a FIFO (named
// pipe)", "a character device", "a block device", "a socket", "a folder",
// else "not a regular file".
const char* file_kind(mode_t mode);

// Opens `path` (a link is followed) for reading when it is a regular file:
// opened with O_NONBLOCK so that a FIFO cannot block, checked with fstat,
// then made blocking again; close-on-exec. Throws Error(kUsage) with one
// line, "cannot read WHAT 'PATH': it is a FIFO (named pipe), not a regular
// file; give the path of a file", when it is anything else (a folder, a
// FIFO, a device, a socket); a path that stat() already shows to be one is
// never opened. Returns -1 with errno set when it cannot be opened (absent,
// permissions): the caller says what to do then.
int open_regular_file(const std::filesystem::path& path, std::string_view what);

// The whole content of the regular file `path`, opened by
// open_regular_file (the same refusals); std::nullopt with errno set when
// it cannot be opened. Throws Error(kRuntime) naming it when a read fails.
std::optional<std::string> read_regular_file(const std::filesystem::path& path,
                                             std::string_view what);

// The most a file a person writes (a config, a study file) may hold: such
// a file is a few KB, and one of gigabytes (of zeros) was read whole before
// its first byte was judged (thirty-sixth hunt, A-D5).
inline constexpr uintmax_t kMaxWrittenFileBytes = uintmax_t{16} << 20;

// Throws Error(kUsage) with one line, "WHAT 'PATH' is N bytes, more than
// the 16 MiB a WHAT may be; HINT", when the file at `path` is larger than
// kMaxWrittenFileBytes; does nothing when its size cannot be read (the
// read that follows says why).
void refuse_oversized(const std::filesystem::path& path, std::string_view what,
                      std::string_view hint);

// Writes `body` into the FIFO (named pipe) at `path` in place, waiting at
// most `wait_s` seconds for a reader to open it (a command whose reader is
// started beside it, `cat fifo & trainscope ... -o fifo`): a FIFO nobody
// reads is refused with Error(kUsage), "cannot write 'PATH': it is a FIFO
// (named pipe) that nobody reads; start its reader first, or give a file",
// where a plain open() would block forever. Errors while writing throw as
// fail_writing does.
void write_fifo(const std::filesystem::path& path, const std::function<void(std::ostream&)>& body,
                double wait_s = 10);

}  // namespace trainscope::core
