// A stream buffer writing to a file descriptor (internal to core): the
// writers of synced files and of FIFOs share it.
#pragma once

#include <streambuf>
#include <string_view>
#include <vector>

#include "trainscope/core/output.h"

namespace trainscope::core::detail {

// Buffers 64 KiB and writes it with write_fully() (partial writes, EINTR,
// and EAGAIN of a descriptor set O_NONBLOCK are no failure); the first
// failure is kept (failed(), error()) and every later byte dropped.
// Subclasses see each buffer's bytes before they are written (seen()).
class FdOutBuf : public std::streambuf {
 public:
  explicit FdOutBuf(int fd) : fd_(fd), buf_(1 << 16) { reset(); }
  bool failed() const { return failed_; }
  int error() const { return errno_; }

 protected:
  virtual void seen(const char* /*bytes*/, size_t /*n*/) {}

  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  void reset() { setp(buf_.data(), buf_.data() + buf_.size()); }
  bool drain() {
    const char* p = pbase();
    const auto n = static_cast<size_t>(pptr() - pbase());
    seen(p, n);
    if (n > 0 && !failed_) {
      errno_ = write_fully(fd_, std::string_view(p, n));
      failed_ = errno_ != 0;
    }
    reset();
    return !failed_;
  }

  int fd_;
  std::vector<char> buf_;
  bool failed_ = false;
  int errno_ = 0;
};

}  // namespace trainscope::core::detail
