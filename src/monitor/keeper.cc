// The keeper between watch and its program (keeper.h). Everything the
// keeper and the program's side run after fork() is async-signal-safe
// (system calls, no allocation, no lock): watch has threads, and a fork
// copies only the one that called it.
#include "keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "trainscope/core/error.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"

namespace trainscope::monitor::detail {

namespace {

constexpr int kKeptSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kMaxProcesses = 16384;  // scanned in /proc at once
constexpr double kGraceSeconds = 5;

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A decimal number of `text` up to its first non-digit; -1 when none.
long number_of(const char* text) {
  long v = -1;
  for (; *text >= '0' && *text <= '9'; ++text) v = (v < 0 ? 0 : v * 10) + (*text - '0');
  return v;
}

// The parent of process `pid` (its name in /proc), from /proc/PID/stat:
// "pid (comm) state ppid ..."; the comm may hold ')' and blanks, so the
// fields start after its last ')'. -1 when it is gone.
long parent_of(const char* pid) {
  char path[64] = "/proc/";
  size_t at = 6;
  for (; *pid && at < sizeof path - 6; ++pid) path[at++] = *pid;
  std::memcpy(path + at, "/stat", 6);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* close_paren = nullptr;
  for (const char* p = buf; *p; ++p)
    if (*p == ')') close_paren = p;
  if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ') return -1;
  return number_of(close_paren + 4);
}

// Every process below `root` (children, theirs, ...), into `out`; their
// number. One pass over /proc, then parents followed within it.
size_t descendants(pid_t root, pid_t* out) {
  static long pids[kMaxProcesses], parents[kMaxProcesses];
  size_t n = 0;
  const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  char buf[8192];
  for (ssize_t got; (got = getdents64(dir, buf, sizeof buf)) > 0;) {
    for (ssize_t at = 0; at < got && n < kMaxProcesses;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + at);
      at += e->d_reclen;
      const long pid = number_of(e->d_name);
      if (pid <= 0) continue;
      pids[n] = pid;
      parents[n++] = parent_of(e->d_name);
    }
  }
  close(dir);
  size_t found = 0;
  for (bool grew = true; grew;) {  // below root, or below one found
    grew = false;
    for (size_t i = 0; i < n; ++i) {
      if (pids[i] == 0) continue;
      bool below = parents[i] == root;
      for (size_t j = 0; !below && j < found; ++j) below = parents[i] == out[j];
      if (!below) continue;
      out[found++] = static_cast<pid_t>(pids[i]);
      pids[i] = 0;  // taken
      grew = true;
    }
  }
  return found;
}

// Reaps every child that ended; the program's status goes to watch once.
void reap(pid_t program, int& status_fd) {
  int status = 0;
  for (pid_t c; (c = waitpid(-1, &status, WNOHANG)) > 0;) {
    if (c != program || status_fd < 0) continue;
    (void)!write(status_fd, &status, sizeof status);
    close(status_fd);
    status_fd = -1;
  }
}

// Ends every process below the keeper: SIGTERM once each, SIGKILL to what
// is left after kGraceSeconds; returns when none is left.
void end_everything_below(pid_t program, int& status_fd) {
  static pid_t below[kMaxProcesses], signalled[kMaxProcesses];
  size_t told = 0;
  const double deadline = now_s() + kGraceSeconds;
  for (;;) {
    reap(program, status_fd);
    const size_t n = descendants(getpid(), below);
    if (n == 0) return;
    const bool late = now_s() > deadline;
    for (size_t i = 0; i < n; ++i) {
      bool before = false;
      for (size_t j = 0; !before && j < told; ++j) before = signalled[j] == below[i];
      if (late || !before) core::stop_signal(below[i], late ? SIGKILL : SIGTERM);
      if (!before && told < kMaxProcesses) signalled[told++] = below[i];
    }
    const timespec pause{0, 50'000'000};
    nanosleep(&pause, nullptr);
  }
}

// The keeper's life: reap (SIGCHLD on `child_fd`, a signalfd) until the
// life pipe closes, then end what is below and exit.
[[noreturn]] void keep(pid_t program, int status_fd, int life_fd, int child_fd) {
  for (;;) {
    pollfd fds[2] = {{life_fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info[8];
      (void)!read(child_fd, info, sizeof info);
    }
    reap(program, status_fd);
    if (fds[0].revents != 0) break;  // watch closed its end, or died
  }
  end_everything_below(program, status_fd);
  _exit(0);
}

// The program's side of the keeper's fork: its signals as a shell would
// leave them (what watch ignored stays ignored, the rest at their
// default: exec would reset a handler anyway), SIGTERM when the keeper
// dies, its output on watch's pipes. The kept signals were blocked across
// the fork, so one watch passed on before the exec is delivered now, by
// its default action, never lost to the keeper's SIG_IGN.
[[noreturn]] void become_program(const std::string& exe, std::vector<char*>& argv,
                                 std::vector<char*>& envp, int out_fd, int err_fd,
                                 const struct sigaction* watchs, const sigset_t& mask,
                                 pid_t keeper) {
  for (size_t i = 0; i < std::size(kKeptSignals); ++i) {
    struct sigaction sa = watchs[i];
    if (sa.sa_handler != SIG_IGN) {
      sa = {};
      sa.sa_handler = SIG_DFL;
      sigemptyset(&sa.sa_mask);
    }
    sigaction(kKeptSignals[i], &sa, nullptr);
  }
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  core::reset_signals_for_exec();
  (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != keeper) _exit(127);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  execve(exe.c_str(), argv.data(), envp.data());
  _exit(127);
}

// The keeper's side of watch's fork.
[[noreturn]] void become_keeper(const std::string& exe, std::vector<char*>& argv,
                                std::vector<char*>& envp, int out_fd, int err_fd,
                                const int status[2], const int life[2]) {
  close(status[0]);
  close(life[1]);
  (void)prctl(PR_SET_NAME, "trainscope-keep");
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction ignore {
  }, watchs[std::size(kKeptSignals)];
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (size_t i = 0; i < std::size(kKeptSignals); ++i)
    sigaction(kKeptSignals[i], &ignore, &watchs[i]);
  sigset_t mask, chld, held;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  held = chld;
  for (int sig : kKeptSignals) sigaddset(&held, sig);
  sigprocmask(SIG_BLOCK, &held, &mask);  // the kept ones until the program has its own
  const int child_fd = signalfd(-1, &chld, SFD_CLOEXEC);
  const pid_t keeper = getpid();
  const pid_t program = child_fd < 0 ? -1 : fork();
  if (program == 0) become_program(exe, argv, envp, out_fd, err_fd, watchs, mask, keeper);
  sigset_t kept;
  sigemptyset(&kept);
  for (int sig : kKeptSignals) sigaddset(&kept, sig);
  sigprocmask(SIG_UNBLOCK, &kept, nullptr);  // ignored here, as before
  const int sent = program;
  (void)!write(status[1], &sent, sizeof sent);
  close(out_fd);
  close(err_fd);
  if (program < 0) _exit(127);
  keep(program, status[1], life[0], child_fd);
}

// Reads exactly one int from `fd` (EINTR retried); false at its end.
bool read_int(int fd, int& v) {
  size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(&v);
  while (got < sizeof v) {
    const ssize_t n = read(fd, bytes + got, sizeof v - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Kept start_kept(const std::string& exe, std::vector<char*>& argv, std::vector<char*>& envp,
                int out_fd, int err_fd) {
  int status[2] = {-1, -1}, life[2] = {-1, -1};
  if (pipe2(status, O_CLOEXEC) != 0 || pipe2(life, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : {status[0], status[1], life[0], life[1]})
      if (fd >= 0) close(fd);
    core::fail(core::ErrorKind::kRuntime, "cannot create a pipe: {}", std::strerror(e));
  }
  Kept k;
  k.keeper = fork();
  const int fork_error = errno;
  if (k.keeper == 0) become_keeper(exe, argv, envp, out_fd, err_fd, status, life);
  close(status[1]);
  close(life[0]);
  k.status_fd = status[0];
  k.life_fd = life[1];
  int program = -1;
  if (k.keeper < 0 || !read_int(k.status_fd, program) || program <= 0) {
    const int e = k.keeper < 0 ? fork_error : EAGAIN;
    release_kept(k);
    core::fail(core::ErrorKind::kRuntime, "cannot start '{}': {}", exe, std::strerror(e));
  }
  k.program = program;
  return k;
}

std::optional<int> wait_kept(const Kept& k) {
  int status = 0;
  if (read_int(k.status_fd, status)) return status;
  return std::nullopt;
}

void release_kept(Kept& k) {
  for (int* fd : {&k.status_fd, &k.life_fd}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  if (k.keeper > 0)
    while (waitpid(k.keeper, nullptr, 0) < 0 && errno == EINTR) {
    }
  k.keeper = -1;
}

}  // namespace trainscope::monitor::detail
