// The local launcher of `train --nproc N` (launch.h). It hosts the
// rendezvous (a c10d TCPStore server on 127.0.0.1, port 0: the kernel picks
// a free one, so there is no fixed port to collide on) and watches the
// ranks: the first that fails ends the others. Ranks are exec'd, or forked
// to run in this process's image (LaunchOptions::in_process).
#include "trainscope/dist/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>

#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/world.h"

namespace trainscope::dist {
using core::ErrorKind;
using core::fail;

namespace {

// The ranks, for the signal handler: a stop asked of the launcher (SIGINT,
// SIGTERM, SIGHUP: its terminal closed) is passed on to every rank as
// SIGTERM (they agree on the step to stop at); a second one kills them.
pid_t g_pids[256];
volatile std::sig_atomic_t g_started = 0, g_signals = 0, g_first_signal = 0;

void on_signal(int received) {
  const int sig = g_signals == 0 ? SIGTERM : SIGKILL;
  g_signals = 1;
  if (g_first_signal == 0) g_first_signal = received;
  for (int r = 0; r < g_started; ++r) core::stop_signal(g_pids[r], sig);
}

// The rendezvous in a rank's environment, and the descriptor it writes
// its error's line into (kErrorFdVar; kept open across its exec).
void set_rank_env(int rank, int size, int port, int error_fd) {
  setenv(kRankVar, std::to_string(rank).c_str(), 1);
  setenv(kSizeVar, std::to_string(size).c_str(), 1);
  setenv(kAddrVar, "127.0.0.1", 1);
  setenv(kPortVar, std::to_string(port).c_str(), 1);
  setenv(kLauncherVar, "1", 1);
  fcntl(error_fd, F_SETFD, 0);
  setenv(kErrorFdVar, std::to_string(error_fd).c_str(), 1);
}

// One pipe per rank for its error's line (kErrorFdVar). The read ends are
// non-blocking: a process a rank started may still hold a write end.
class ErrorPipes {
 public:
  explicit ErrorPipes(int n) {
    for (int r = 0; r < n; ++r) {
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0)
        fail(ErrorKind::kRuntime, "cannot start rank {}: {}", r, std::strerror(errno));
      fcntl(p[0], F_SETFL, O_NONBLOCK);
      read_.push_back(p[0]);
      write_.push_back(p[1]);
    }
  }
  ~ErrorPipes() {
    for (int fd : read_) close(fd);
    close_writes();
  }
  ErrorPipes(const ErrorPipes&) = delete;
  ErrorPipes& operator=(const ErrorPipes&) = delete;
  int write_end(int rank) const { return write_[static_cast<size_t>(rank)]; }
  // In the launcher once the ranks started: a rank's exit ends its pipe.
  void close_writes() {
    for (int& fd : write_)
      if (fd >= 0) close(std::exchange(fd, -1));
  }
  // What rank `r` wrote, at most kMaxErrorLine bytes.
  std::string take(int r) const {
    std::string out;
    char buf[1024];
    for (ssize_t n; out.size() < kMaxErrorLine &&
                    (n = read(read_[static_cast<size_t>(r)], buf, sizeof buf)) > 0;)
      out.append(buf, static_cast<size_t>(n));
    return out.substr(0, kMaxErrorLine);
  }

 private:
  std::vector<int> read_, write_;
};

// A rank that dies with this launcher: no rank is left waiting for a dead one.
void die_with(pid_t launcher) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) _exit(127);
}

pid_t start_rank(const std::vector<std::string>& argv, int rank, int size, int port, int error_fd) {
  std::vector<char*> args = core::exec_argv(argv);
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid < 0) fail(ErrorKind::kRuntime, "cannot start rank {}: {}", rank, std::strerror(errno));
  if (pid == 0) {
    die_with(launcher);
    set_rank_env(rank, size, port, error_fd);
    core::reclose_standard_descriptors();  // a closed stdout is closed for rank 0 too
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// A rank forked to run in this process's image (LaunchOptions::in_process):
// it waits for the rendezvous port on `port_fd`, runs its command line and
// exits without static destructors (its run is recorded by then).
[[noreturn]] void run_forked_rank(const LaunchOptions& o, int rank, int port_fd, int error_fd,
                                  pid_t launcher) {
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  die_with(launcher);
  int port = 0;
  if (read(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) _exit(127);
  close(port_fd);
  set_rank_env(rank, o.nproc, port, error_fd);
  int code = 1;
  try {
    code = o.in_process(o.argv[static_cast<size_t>(rank)]);
  } catch (...) {
  }
  core::exit_now(code);
}

// Forks the ranks of LaunchOptions::in_process; returns the pipes to send
// each its port on.
std::vector<int> fork_ranks(const LaunchOptions& o, const ErrorPipes& errors, LaunchOutcome& out) {
  std::vector<int> port_fds;
  const pid_t launcher = getpid();
  std::fflush(nullptr);
  for (int r = 0; r < o.nproc; ++r) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
      fail(ErrorKind::kRuntime, "cannot start rank {}: {}", r, std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) fail(ErrorKind::kRuntime, "cannot start rank {}: {}", r, std::strerror(errno));
    if (pid == 0) {
      close(p[1]);
      for (int fd : port_fds) close(fd);
      run_forked_rank(o, r, p[0], errors.write_end(r), launcher);
    }
    close(p[0]);
    port_fds.push_back(p[1]);
    out.pids.push_back(pid);
    g_pids[r] = pid;
    g_started = r + 1;
  }
  return port_fds;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (SIG" + sigabbrev_np(sig) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

int code_of(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// SIGTERM to every rank still running, SIGKILL to those left after `grace`.
void stop_others(const std::vector<pid_t>& pids, const std::vector<bool>& done, double grace) {
  for (size_t r = 0; r < pids.size(); ++r)
    if (!done[r]) core::stop_signal(pids[r], SIGTERM);
  const double until = core::monotonic_now() + grace;
  while (core::monotonic_now() < until) {
    bool left = false;
    for (size_t r = 0; r < pids.size(); ++r)
      if (!done[r] && waitpid(pids[r], nullptr, WNOHANG) == 0) left = true;
    if (!left) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (size_t r = 0; r < pids.size(); ++r)
    if (!done[r]) kill(pids[r], SIGKILL);
}

c10::intrusive_ptr<c10d::TCPStore> start_store(const LaunchOptions& o) {
  c10d::TCPStoreOptions so;
  so.port = 0;
  so.isServer = true;
  so.waitWorkers = false;
  so.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
}

}  // namespace

LaunchOutcome launch(const LaunchOptions& o) {
  g_started = 0;
  g_signals = 0;
  g_first_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  LaunchOutcome out;
  ErrorPipes errors(o.nproc);
  c10::intrusive_ptr<c10d::TCPStore> store;
  if (o.in_process) {
    const std::vector<int> port_fds = fork_ranks(o, errors, out);
    store = start_store(o);
    const int port = store->getPort();
    for (int fd : port_fds) {
      (void)!write(fd, &port, sizeof port);  // a rank already gone fails below
      close(fd);
    }
  } else {
    store = start_store(o);
    for (int r = 0; r < o.nproc; ++r) {
      out.pids.push_back(start_rank(o.argv[static_cast<size_t>(r)], r, o.nproc, store->getPort(),
                                    errors.write_end(r)));
      g_pids[r] = out.pids.back();
      g_started = r + 1;
    }
  }
  errors.close_writes();
  std::vector<bool> done(static_cast<size_t>(o.nproc), false);
  for (int left = o.nproc; left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    int r = 0;
    while (r < o.nproc && out.pids[static_cast<size_t>(r)] != pid) ++r;
    if (r == o.nproc) continue;
    done[static_cast<size_t>(r)] = true;
    --left;
    if (r == 0 && out.failed_rank < 0) out.exit_code = code_of(status);
    if (status != 0 && out.failed_rank < 0) {
      out.failed_rank = r;
      out.what = describe(status);
      out.exit_code = code_of(status);
      stop_others(out.pids, done, o.grace_s);
    }
  }
  for (int r = 0; r < o.nproc; ++r) out.errors.push_back(errors.take(r));
  out.signal = g_first_signal;
  if (store->check({"run"})) {
    out.run_uuid = stored_value(store->get("run"));  // World::set by rank 0
  }
  return out;
}

}  // namespace trainscope::dist
