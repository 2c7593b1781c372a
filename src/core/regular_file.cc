// Files opened so that a FIFO, device or socket is refused, never waited on.
#include "trainscope/core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ostream>
#include <streambuf>
#include <thread>
#include <vector>

#include "fd_streambuf.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace trainscope::core {
namespace {

[[noreturn]] void refuse(const std::filesystem::path& path, std::string_view what, mode_t mode) {
  fail(ErrorKind::kUsage,
       "cannot read {} '{}': it is {}, not a regular file; give the path of a file", what,
       escape_for_display(path.string()), file_kind(mode));
}

// Closes a descriptor on every path out, errno kept.
void close_keeping_errno(int fd) {
  const int err = errno;
  ::close(fd);
  errno = err;
}

}  // namespace

const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  return "not a regular file";
}

int open_regular_file(const std::filesystem::path& path, std::string_view what) {
  struct stat st {};
  // A device is never opened (opening some has effects: a tape rewinds).
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(path, what, st.st_mode);
  // O_NONBLOCK: what replaced the file since stat() cannot block open().
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  if (::fstat(fd, &st) != 0) {
    close_keeping_errno(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(path, what, st.st_mode);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    close_keeping_errno(fd);
    return -1;
  }
  return fd;
}

std::optional<std::string> read_regular_file(const std::filesystem::path& path,
                                             std::string_view what) {
  const int fd = open_regular_file(path, what);
  if (fd < 0) return std::nullopt;
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail(ErrorKind::kRuntime, "cannot read {} '{}': {}", what, escape_for_display(path.string()),
           std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void refuse_oversized(const std::filesystem::path& path, std::string_view what,
                      std::string_view hint) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxWrittenFileBytes)
    fail(ErrorKind::kUsage, "{} '{}' is {} bytes, more than the {} MiB a {} may be; {}", what,
         escape_for_display(path.string()), size, kMaxWrittenFileBytes >> 20, what, hint);
}

void write_fifo(const std::filesystem::path& path, const std::function<void(std::ostream&)>& body,
                double wait_s) {
  // O_NONBLOCK: ENXIO at once while no reader has the FIFO open.
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  int fd = -1;
  while ((fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0) {
    if (errno == EINTR) continue;
    if (errno != ENXIO)
      fail(ErrorKind::kUsage, "cannot write '{}': {}", path.string(), std::strerror(errno));
    if (std::chrono::steady_clock::now() >= until)
      fail(ErrorKind::kUsage,
           "cannot write '{}': it is a FIFO (named pipe) that nobody reads; start its reader "
           "first, or give a file",
           path.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  detail::FdOutBuf buf(fd);
  std::ostream out(&buf);
  try {
    body(out);
  } catch (...) {
    ::close(fd);
    throw;
  }
  out.flush();
  const int err = buf.failed() ? buf.error() : 0;
  ::close(fd);
  if (buf.failed() || !out) fail_writing("'" + path.string() + "'", err);
}

}  // namespace trainscope::core
