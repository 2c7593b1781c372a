// Output is not the run (output.h): stdout and stderr through C stdio, the
// first failure of each remembered, and everything after it dropped.
#include "trainscope/core/output.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <stdio_ext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <streambuf>

#include "trainscope/core/util.h"

namespace trainscope::core {
namespace {

struct StreamState {
  std::atomic<int> error{0};        // errno of the first write that failed
  std::atomic<bool> closed{false};  // closed when the process started
};

StreamState g_stdout, g_stderr;
std::mutex g_recorded_mu;
std::string g_recorded;               // what the command recorded, a clause (note_recorded)
std::atomic<bool> g_reported{false};  // the line was said (here or by a rank)
std::atomic<bool> g_cut_elsewhere{false};
sigset_t g_startup_mask;  // the mask trainscope started with, less SIGPIPE and SIGXFSZ
std::atomic<bool> g_mask_saved{false};

StreamState& std_state(StdStream s) { return s == StdStream::kStdout ? g_stdout : g_stderr; }

// stdio hands every buffer of a standard stream here: all of it is written,
// or the failure is recorded with its errno (glibc does not promise to keep
// errno up to fwrite's return) and 0 returned, fopencookie's "failed".
ssize_t write_buffer(void* cookie, const char* data, size_t size) {
  const auto s = static_cast<StdStream>(reinterpret_cast<intptr_t>(cookie));
  const int err = write_fully(static_cast<int>(s), std::string_view(data, size));
  if (err == 0) return static_cast<ssize_t>(size);
  int none = 0;
  std_state(s).error.compare_exchange_strong(none, err);
  errno = err;
  return 0;
}

// trainscope's FILE over descriptor 1 or 2 (output.h says why not glibc's
// own), buffered as glibc buffers its own: stderr not at all, stdout by line
// on a terminal and in blocks otherwise.
FILE* open_standard(StdStream s) {
  cookie_io_functions_t io{};
  io.write = write_buffer;
  FILE* f = fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(s)), "w", io);
  if (!f) return s == StdStream::kStdout ? stdout : stderr;  // out of memory: glibc's own
  if (s == StdStream::kStderr)
    setvbuf(f, nullptr, _IONBF, 0);
  else
    setvbuf(f, nullptr, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
  return f;
}

// Never closed: exit() and fflush(nullptr) (before a fork) flush them with
// every other stream.
FILE* std_file(StdStream s) {
  static FILE* const out = open_standard(StdStream::kStdout);
  static FILE* const err = open_standard(StdStream::kStderr);
  return s == StdStream::kStdout ? out : err;
}

// With the stream locked: the first failure wins, and the bytes stdio still
// holds are dropped, so that no flush (exit's among them) tries them again.
void record_failure(StdStream s, FILE* f, int err) {
  int none = 0;
  std_state(s).error.compare_exchange_strong(none, err != 0 ? err : EIO);
  __fpurge(f);
}

// Writes (`bytes`) or flushes (nullptr) with the stream locked; errno is the
// caller's again afterwards.
bool put_standard(StdStream s, const std::string_view* bytes) {
  StreamState& st = std_state(s);
  if (st.error.load() != 0) return false;
  const int saved = errno;
  FILE* f = std_file(s);
  flockfile(f);
  bool ok = true;
  if (st.closed.load()) {
    // Nothing to lose while nothing is written: a closed stdout that is
    // never written to is no failure.
    ok = !bytes || bytes->empty();
    if (!ok) record_failure(s, f, EBADF);
  } else {
    errno = 0;
    ok = bytes ? fwrite_unlocked(bytes->data(), 1, bytes->size(), f) == bytes->size()
               : fflush_unlocked(f) == 0;
    if (!ok) record_failure(s, f, errno);
  }
  funlockfile(f);
  errno = saved;
  return ok;
}

// std::cout's and std::cerr's buffer: every byte to write_standard(). It
// never fails, so a stream never turns bad and no command stops halfway.
class StandardBuf final : public std::streambuf {
 public:
  explicit StandardBuf(StdStream s) : s_(s) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    write_standard(s_, std::string_view(&ch, 1));
    return c;
  }
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    write_standard(s_, std::string_view(p, static_cast<size_t>(n)));
    return n;
  }
  int sync() override {
    flush_standard(s_);
    return 0;
  }

 private:
  StdStream s_;
};

// The write that raised it fails (EPIPE; EFBIG past `ulimit -f`): that is
// all trainscope needs.
void on_write_signal(int) {}

void catch_write_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_write_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPIPE, &sa, nullptr);
  sigaction(SIGXFSZ, &sa, nullptr);
  sigset_t write_signals;
  sigemptyset(&write_signals);
  sigaddset(&write_signals, SIGPIPE);
  sigaddset(&write_signals, SIGXFSZ);
  sigprocmask(SIG_UNBLOCK, &write_signals, &g_startup_mask);
  sigdelset(&g_startup_mask, SIGPIPE);
  sigdelset(&g_startup_mask, SIGXFSZ);
  g_mask_saved = true;
}

// A closed 0, 1 or 2 gets /dev/null: the next file opened would take its
// number and receive what is printed (or be read as input).
void occupy_closed_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got >= 0 && got != fd) {
      dup2(got, fd);
      close(got);
    }
    if (fd > 0) std_state(static_cast<StdStream>(fd)).closed = true;
  }
}

std::string what_to_do(int err, const char* stream) {
  switch (err) {
    case EPIPE:
      return "the program reading it stopped before the end, so the output is cut";
    case EBADF:
      return fmt::format("{} was closed when trainscope started, so the output is cut", stream);
    default:
      return "free space or choose another place";
  }
}

}  // namespace

int write_fully(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Not a failure: the reader has not caught up yet. POLLERR and POLLHUP
      // end the wait too, and the next write says what went wrong.
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, -1) < 0 && errno != EINTR) return errno;
    } else {
      return n < 0 ? errno : EIO;  // nothing taken of a nonempty write: no progress
    }
  }
  return 0;
}

void guard_standard_output() {
  catch_write_signals();
  occupy_closed_descriptors();
  // Buffered by what descriptor 1 is now (a terminal or not), as glibc's
  // stdout would have been.
  std_file(StdStream::kStdout);
  // Never destroyed: std::cout is flushed after every static destructor ran.
  static auto* out = new StandardBuf(StdStream::kStdout);
  static auto* err = new StandardBuf(StdStream::kStderr);
  std::cout.flush();
  std::cerr.flush();
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  std::clog.rdbuf(err);
}

bool write_standard(StdStream s, std::string_view bytes) { return put_standard(s, &bytes); }

bool flush_standard(StdStream s) { return put_standard(s, nullptr); }

int standard_error(StdStream s) { return std_state(s).error.load(); }

void reclose_standard_descriptors() {
  for (StdStream s : {StdStream::kStdout, StdStream::kStderr})
    if (std_state(s).closed.load()) close(static_cast<int>(s));
}

void forget_standard_failures() {
  for (StdStream s : {StdStream::kStdout, StdStream::kStderr}) {
    std_state(s).error = 0;
    std_state(s).closed = false;
    clearerr(std_file(s));
  }
  g_reported = false;
  g_cut_elsewhere = false;
}

void note_recorded(std::string clause) {
  std::lock_guard lock(g_recorded_mu);
  g_recorded = std::move(clause);
}

void note_recorded_run(std::string_view name, std::string_view uuid) {
  note_recorded(fmt::format("the run {} ({}) was recorded in full", escape_for_display(name),
                            short_uuid(uuid)));
}

std::string output_cut_message() {
  std::cout.flush();
  std::cerr.flush();
  flush_standard(StdStream::kStdout);
  flush_standard(StdStream::kStderr);
  const int out = standard_error(StdStream::kStdout), err = standard_error(StdStream::kStderr);
  if (out == 0 && err == 0) return {};
  const char* stream = out != 0 ? "stdout" : "stderr";
  std::string line = fmt::format(
      "cannot write the output to {}: {}; {}", out != 0 && err != 0 ? "stdout and stderr" : stream,
      std::strerror(out != 0 ? out : err), what_to_do(out != 0 ? out : err, stream));
  std::lock_guard lock(g_recorded_mu);
  if (!g_recorded.empty()) line += "; " + g_recorded;
  return line;
}

bool report_output_cut() {
  const std::string line = output_cut_message();
  if (line.empty()) return g_cut_elsewhere.load();
  if (!g_reported.exchange(true)) {
    write_standard(StdStream::kStderr, "trainscope: " + line + "\n");
    flush_standard(StdStream::kStderr);
  }
  return true;
}

bool only_a_reader_left() {
  output_cut_message();  // flushes
  std::lock_guard lock(g_recorded_mu);
  return standard_error(StdStream::kStdout) == EPIPE && standard_error(StdStream::kStderr) == 0 &&
         g_recorded.empty() && !g_cut_elsewhere.load();
}

void note_output_cut_reported() {
  g_cut_elsewhere = true;
  g_reported = true;
}

void reset_signals_for_exec() {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
  sigaction(SIGXFSZ, &sa, nullptr);
  if (g_mask_saved.load()) {
    sigprocmask(SIG_SETMASK, &g_startup_mask, nullptr);
    return;
  }
  sigset_t write_signals;
  sigemptyset(&write_signals);
  sigaddset(&write_signals, SIGPIPE);
  sigaddset(&write_signals, SIGXFSZ);
  sigprocmask(SIG_UNBLOCK, &write_signals, nullptr);
}

}  // namespace trainscope::core
