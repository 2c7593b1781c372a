// Warm workers: one process loads libtorch and decodes the dataset once,
// then forks a child per training (see executor.h). Both sides are here:
// the study's executor and the worker's loop, talking over a socket pair
// in frames of length-prefixed strings.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "job_process.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/study/executor.h"

namespace trainscope::study {

using core::ErrorKind;
using core::fail;

namespace {

using Frame = std::vector<std::string>;

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void append_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<char*>(&v), 4); }

bool send_frame(int fd, const Frame& f) {
  std::string body;
  append_u32(body, static_cast<uint32_t>(f.size()));
  for (const auto& s : f) append_u32(body, static_cast<uint32_t>(s.size())), body += s;
  std::string bytes;
  append_u32(bytes, static_cast<uint32_t>(body.size()));
  return write_all(fd, bytes + body);
}

// nullopt when the other side closed the socket (or sent garbage).
std::optional<Frame> read_frame(int fd) {
  uint32_t size = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&size), 4)) return std::nullopt;
  std::string body(size, '\0');
  if (!read_all(fd, body.data(), size)) return std::nullopt;
  Frame f;
  size_t at = 0;
  auto u32 = [&](uint32_t& v) {
    if (at + 4 > body.size()) return false;
    std::memcpy(&v, body.data() + at, 4);
    at += 4;
    return true;
  };
  uint32_t count = 0, len = 0;
  if (!u32(count)) return std::nullopt;
  for (uint32_t i = 0; i < count; ++i) {
    if (!u32(len) || at + len > body.size()) return std::nullopt;
    f.push_back(body.substr(at, len));
    at += len;
  }
  return f;
}

// A job as a frame: id, log, argc, argv..., then key, value pairs.
Frame encode(const Job& job) {
  Frame f{job.id, job.log.string(), std::to_string(job.argv.size())};
  f.insert(f.end(), job.argv.begin(), job.argv.end());
  for (const auto& [k, v] : job.env) f.push_back(k), f.push_back(v);
  return f;
}

std::optional<Job> decode(const Frame& f) {
  if (f.size() < 3) return std::nullopt;
  Job job{f[0], {}, f[1], {}};
  const size_t argc = std::stoul(f[2]);
  if (3 + argc > f.size() || (f.size() - 3 - argc) % 2 != 0) return std::nullopt;
  job.argv.assign(f.begin() + 3, f.begin() + 3 + static_cast<std::ptrdiff_t>(argc));
  for (size_t i = 3 + argc; i < f.size(); i += 2) job.env[f[i]] = f[i + 1];
  return job;
}

// The warm frame: "warm", config, code, then the set lines.
Frame encode(const Warm& w) {
  Frame f{"warm", w.config, w.code};
  f.insert(f.end(), w.sets.begin(), w.sets.end());
  return f;
}

Warm decode_warm(const Frame& f) {
  return {f[1], std::vector<std::string>(f.begin() + 3, f.end()), f[2]};
}

}  // namespace

// ---- the worker's side ----

namespace {

// The worker's children, reaped as SIGCHLD arrives (through a signalfd),
// each end reported on the socket. A child that returns from its run says
// so on a pipe before it exits: its end is reported then, and the next
// job forks while the kernel frees its memory (15 ms for a training of
// the demo CNN).
class JobServer {
 public:
  JobServer(int fd, const std::function<int(const Job&)>& run) : fd_(fd), run_(run) {
    sigemptyset(&chld_);
    sigaddset(&chld_, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld_, &old_mask_);
    sfd_ = signalfd(-1, &chld_, SFD_CLOEXEC);
    if (sfd_ < 0 || pipe2(done_, O_CLOEXEC | O_NONBLOCK) != 0)
      fail(ErrorKind::kRuntime, "study worker: {}", std::strerror(errno));
  }
  ~JobServer() {
    close(sfd_);
    close(done_[0]);
    close(done_[1]);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }

  void serve() {
    bool open = true;
    while (open || !children_.empty()) {
      pollfd p[3] = {{sfd_, POLLIN, 0}, {done_[0], POLLIN, 0}, {open ? fd_ : -1, POLLIN, 0}};
      if (poll(p, 3, -1) < 0) {
        if (errno == EINTR) continue;
        fail(ErrorKind::kRuntime, "poll: {}", std::strerror(errno));
      }
      if (p[1].revents) read_done();
      if (p[0].revents) reap();
      if (open && p[2].revents) open = start_next();
    }
  }

 private:
  bool start_next() {
    auto frame = read_frame(fd_);
    if (!frame) return false;  // the study closed its end: no more jobs
    auto job = decode(*frame);
    if (!job) return false;
    std::cout.flush();
    std::fflush(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) child(*job, parent);
    if (pid < 0) {
      send_frame(fd_, {"E", job->id, "127", "0"});
      return true;
    }
    children_[pid] = job->id;
    send_frame(fd_, {"S", job->id, std::to_string(pid)});
    return true;
  }

  [[noreturn]] void child(const Job& job, pid_t parent) {
    close(sfd_);
    close(fd_);
    close(done_[0]);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    enter_job(job, parent);
    int code = 1;
    try {
      code = run_(job);
    } catch (...) {
    }
    // The run is recorded and its store closed by now: what is left is
    // output to flush and memory to free.
    std::cout.flush();
    std::fflush(nullptr);
    const std::string done = fmt::format("{} {}\n", getpid(), code);
    (void)!write(done_[1], done.data(), done.size());  // < PIPE_BUF: one piece
    core::exit_now(code);
  }

  // Children that said they are done: their ends are reported now.
  void read_done() {
    char buf[4096];
    ssize_t n;
    while ((n = read(done_[0], buf, sizeof buf)) > 0) {
      pending_.append(buf, static_cast<size_t>(n));
      for (size_t eol; (eol = pending_.find('\n')) != std::string::npos;) {
        const std::string line = pending_.substr(0, eol);
        pending_.erase(0, eol + 1);
        const pid_t pid = static_cast<pid_t>(std::atol(line.c_str()));
        auto it = children_.find(pid);
        if (it == children_.end() || reported_.count(pid)) continue;
        send_frame(fd_, {"E", it->second, line.substr(line.find(' ') + 1), "0"});
        reported_.insert(pid);
      }
    }
  }

  void reap() {
    signalfd_siginfo info;
    while (read(sfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (poll_once()) break;
    }
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = children_.find(pid);
      if (it == children_.end()) continue;
      read_done();  // a child that said it is done, then exited at once
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (reported_.erase(pid) == 0)
        send_frame(fd_, {"E", it->second, std::to_string(code), std::to_string(sig)});
      children_.erase(it);
    }
  }

  // Whether the signalfd has nothing more to read now.
  bool poll_once() {
    pollfd p{sfd_, POLLIN, 0};
    return poll(&p, 1, 0) <= 0;
  }

  int fd_;
  const std::function<int(const Job&)>& run_;
  sigset_t chld_{}, old_mask_{};
  int sfd_ = -1;
  int done_[2] = {-1, -1};  // children write "pid code\n" when their run returned
  std::string pending_;
  std::map<pid_t, std::string> children_;
  std::set<pid_t> reported_;  // ended on the socket, not reaped yet
};

}  // namespace

void serve_jobs(int fd, const std::function<void(const Warm&)>& warm,
                const std::function<int(const Job&)>& run) {
  // Die with the study; its children then get SIGTERM from theirs.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The first frame names the config whose dataset to warm: it comes once
  // the study is planned, while this process has been loading libtorch.
  auto first = read_frame(fd);
  if (!first) return;  // the study ended before it planned anything
  if (first->size() < 3 || (*first)[0] != "warm")
    fail(ErrorKind::kRuntime, "study worker: expected the warm frame first");
  const Warm w = decode_warm(*first);
  if (!w.code.empty()) env::warm_git_state(w.code);
  warm(w);
  JobServer(fd, run).serve();
}

WorkerProcess start_worker(const std::vector<std::string>& argv, const Warm& warm) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    fail(ErrorKind::kRuntime, "cannot start a study worker: {}", std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) fail(ErrorKind::kRuntime, "cannot start a study worker: {}", std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(sv[1], 3);  // dup2 leaves fd 3 open across exec
    std::vector<char*> args = core::exec_argv(argv);
    execv(args[0], args.data());
    _exit(127);
  }
  close(sv[1]);
  send_frame(sv[0], encode(warm));  // a dead worker shows at the next frame
  return {sv[0], pid};
}

// ---- the study's side ----

namespace {

class WarmExecutor : public Executor {
 public:
  WarmExecutor(int slots, std::vector<std::string> worker, Warm warm, WorkerProcess early)
      : slots_(slots), worker_argv_(std::move(worker)), warm_(std::move(warm)), early_(early) {}
  ~WarmExecutor() override {
    stop_all();
    while (running() > 0) (void)wait_any();
    close_worker();
    if (early_.pid > 0) {  // started early, never used: it ends at end of file
      close(early_.fd);
      waitpid(early_.pid, nullptr, 0);
    }
  }
  int slots() const override { return slots_; }
  int running() const override { return static_cast<int>(jobs_.size()); }

  void start(const Job& job) override {
    if (job.argv.empty()) fail(ErrorKind::kUsage, "job {} has no program", job.id);
    make_log_folder(job.log.parent_path());
    if (fd_ < 0) spawn();
    jobs_[job.id] = {core::unix_now(), 0};
    // A worker that died before this job reached it: wait_any reports the
    // job lost, and the next start spawns a new worker.
    if (!send_frame(fd_, encode(job))) jobs_[job.id].lost = true;
  }

  std::optional<JobEnd> wait_any() override {
    while (!jobs_.empty()) {
      if (auto lost = take_lost()) return lost;
      // A signal to the study (its SIGTERM) interrupts the wait for the
      // next frame, not a frame half read. Once stopping, the wait ends at
      // the deadline, for the trainings still running to get SIGKILL.
      if (pollfd p{fd_, POLLIN, 0}; fd_ >= 0) {
        const int got = poll(&p, 1, wait_ms());
        if (got < 0 && errno == EINTR) return std::nullopt;
        if (got == 0) {
          kill_left();
          continue;
        }
      }
      auto frame = fd_ >= 0 ? read_frame(fd_) : std::nullopt;
      if (!frame) {
        worker_died();
        continue;
      }
      if (auto end = on_frame(*frame)) return end;
    }
    return std::nullopt;
  }

  void stop_all() override {
    if (!stopping_) deadline_ = core::monotonic_now() + kTrainingStopGraceS;
    stopping_ = true;
    for (const auto& [id, job] : jobs_)
      if (job.pid > 0) core::stop_signal(job.pid, SIGTERM);
  }

 private:
  // How long wait_any waits for the next frame: until the stop's deadline,
  // else as long as it takes (-1).
  int wait_ms() const {
    if (!stopping_ || killed_) return -1;
    return static_cast<int>(std::max(0.0, (deadline_ - core::monotonic_now()) * 1000) + 1);
  }

  // The trainings still running at the stop's deadline get SIGKILL (their
  // worker then reports each ended by it); a PID reused since is left.
  void kill_left() {
    if (core::monotonic_now() < deadline_) return;
    killed_ = true;
    for (const auto& [id, job] : jobs_)
      if (job.pid > 0 && core::process_alive(job.pid, job.start_ticks)) kill(job.pid, SIGKILL);
  }

  struct Running {
    double start = 0;
    pid_t pid = 0;
    int64_t start_ticks = -1;
    bool lost = false;  // its worker died
  };

  // The worker started before planning (sent what to warm then), else a
  // new one.
  void spawn() {
    WorkerProcess w = early_.pid > 0 ? early_ : start_worker(worker_argv_, warm_);
    early_ = {};
    fd_ = w.fd;
    worker_ = w.pid;
  }

  std::optional<JobEnd> on_frame(const Frame& f) {
    auto it = f.size() >= 2 ? jobs_.find(f[1]) : jobs_.end();
    if (it == jobs_.end()) return std::nullopt;
    if (f[0] == "S" && f.size() == 3) {
      it->second.pid = static_cast<pid_t>(std::stol(f[2]));
      it->second.start_ticks = core::process_start_ticks(it->second.pid);
      if (stopping_) core::stop_signal(it->second.pid, killed_ ? SIGKILL : SIGTERM);
      return std::nullopt;
    }
    if (f[0] != "E" || f.size() != 4) return std::nullopt;
    JobEnd e{f[1], std::stoi(f[2]), std::stoi(f[3]), core::unix_now() - it->second.start};
    jobs_.erase(it);
    return e;
  }

  // The worker is gone (killed, crashed): its children got SIGTERM from
  // their death signal and are checkpointing; each is reported once it has
  // really ended, so that a retry never runs beside it.
  void worker_died() {
    close_worker();
    for (auto& [id, job] : jobs_) job.lost = true;
  }

  std::optional<JobEnd> take_lost() {
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (!it->second.lost) continue;
      if (it->second.pid > 0) wait_gone(it->second);
      JobEnd e{it->first, -1, SIGTERM, core::unix_now() - it->second.start};
      jobs_.erase(it);
      return e;
    }
    return std::nullopt;
  }

  // Waits until a lost job's process has ended (gone, or a zombie of
  // whoever inherited it). One that has not stopped a minute after its
  // SIGTERM gets SIGKILL.
  static void wait_gone(const Running& job) {
    const double deadline = core::unix_now() + 60;
    while (core::process_alive(job.pid, job.start_ticks)) {
      if (core::unix_now() > deadline) kill(job.pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void close_worker() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    if (worker_ > 0) {
      int status = 0;
      while (waitpid(worker_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    worker_ = -1;
  }

  int slots_;
  std::vector<std::string> worker_argv_;
  Warm warm_;
  WorkerProcess early_;
  int fd_ = -1;
  pid_t worker_ = -1;
  bool stopping_ = false, killed_ = false;
  double deadline_ = 0;  // monotonic seconds: a stop's SIGKILL (kTrainingStopGraceS after it)
  std::map<std::string, Running> jobs_;
};

}  // namespace

std::unique_ptr<Executor> warm_executor(int slots, std::vector<std::string> worker_argv, Warm warm,
                                        WorkerProcess early) {
  if (slots < 1) fail(ErrorKind::kUsage, "workers is {}: use at least 1", slots);
  if (worker_argv.empty()) fail(ErrorKind::kUsage, "a warm executor needs a worker command");
  return std::make_unique<WarmExecutor>(slots, std::move(worker_argv), std::move(warm), early);
}

}  // namespace trainscope::study
