// Files written once, hashed as they are written and synced to disk.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>
#include <streambuf>
#include <vector>

#include "fd_streambuf.h"
#include "sha256.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"

namespace trainscope::core {
namespace {

// A stream buffer over a file descriptor that feeds every byte to SHA-256.
class HashingFileBuf final : public detail::FdOutBuf {
 public:
  using FdOutBuf::FdOutBuf;
  int64_t size() const { return size_; }
  std::string sha256() { return hash_.hex(); }

 private:
  void seen(const char* bytes, size_t n) override {
    hash_.update(bytes, n);
    size_ += static_cast<int64_t>(n);
  }

  Sha256 hash_;
  int64_t size_ = 0;
};

// Creates or truncates the regular file `path`: a FIFO there would block
// open() (O_NONBLOCK: ENXIO instead), a device would swallow the bytes.
int open_new_regular_file(const std::filesystem::path& path) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
  const int err = errno;
  struct stat st {};
  // ENXIO: a FIFO that nobody reads, said below.
  if (fd < 0 && (err != ENXIO || ::stat(path.c_str(), &st) != 0))
    fail(ErrorKind::kStore, "cannot write '{}': {}", path.string(), std::strerror(err));
  if (fd >= 0 && ::fstat(fd, &st) != 0) st.st_mode = 0;
  if (fd < 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    fail(ErrorKind::kStore, "cannot write '{}': it is {}, not a regular file; remove it",
         path.string(), file_kind(st.st_mode));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

WrittenFile write_synced_file(const std::filesystem::path& path,
                              const std::function<void(std::ostream&)>& body) {
  const int fd = open_new_regular_file(path);
  HashingFileBuf buf(fd);
  std::ostream out(&buf);
  try {
    body(out);
  } catch (...) {
    ::close(fd);
    throw;
  }
  out.flush();
  const bool ok = !buf.failed() && out.good() && ::fsync(fd) == 0;
  const int err = buf.failed() ? buf.error() : errno;
  ::close(fd);
  if (!ok)
    fail(ErrorKind::kStore, "writing '{}' failed: {}", path.string(),
         err ? std::strerror(err) : "the writer reported an error");
  return {buf.sha256(), buf.size()};
}

void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some file systems refuse
  ::fsync(fd);
  ::close(fd);
}

}  // namespace trainscope::core
