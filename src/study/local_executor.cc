// The local executor: fork/exec one process per training, waitpid for them.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "job_process.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/study/executor.h"

namespace trainscope::study {

using core::ErrorKind;
using core::fail;

namespace {

[[noreturn]] void exec_child(const Job& job, pid_t parent) {
  // A process group of its own: a stop reaches the whole job (a wrapper
  // script's training too), not only the process the study started.
  setpgid(0, 0);
  enter_job(job, parent);
  std::vector<char*> argv = core::exec_argv(job.argv);
  execv(argv[0], argv.data());
  _exit(127);
}

class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(int slots) : slots_(slots) {}
  ~LocalExecutor() override {
    stop_all();
    while (wait_any()) {
    }
  }
  int slots() const override { return slots_; }
  int running() const override { return static_cast<int>(jobs_.size()); }

  void start(const Job& job) override {
    if (job.argv.empty()) fail(ErrorKind::kUsage, "job {} has no program", job.id);
    make_log_folder(job.log.parent_path());
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) fail(ErrorKind::kRuntime, "cannot start job {}: {}", job.id, std::strerror(errno));
    if (pid == 0) exec_child(job, parent);
    setpgid(pid, pid);  // as the child does: whichever runs first
    jobs_[pid] = {job.id, core::unix_now()};
  }

  std::optional<JobEnd> wait_any() override {
    if (jobs_.empty()) return std::nullopt;
    int status = 0;
    const pid_t pid = stopping() ? wait_stopping(status) : waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) return std::nullopt;  // a signal: the caller decides
    auto it = jobs_.find(pid);
    if (pid < 0 || it == jobs_.end()) {
      if (pid < 0) jobs_.clear();  // no children left to wait for
      return std::nullopt;
    }
    JobEnd e{it->second.id, 0, 0, core::unix_now() - it->second.start};
    if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
      e.exit_code = -1;
      e.signal = WTERMSIG(status);
    }
    jobs_.erase(it);
    if (stopping() && jobs_.empty()) end_groups();
    return e;
  }

  // SIGTERM to every job's process group; those still running
  // kStopGraceS later get SIGKILL (wait_any).
  void stop_all() override {
    for (const auto& [pid, job] : jobs_) {
      if (core::stop_signal(-pid, SIGTERM) != 0) core::stop_signal(pid, SIGTERM);
      groups_.push_back(pid);
    }
    if (!stopping()) deadline_ = core::monotonic_now() + kStopGraceS;
  }

 private:
  bool stopping() const { return deadline_ > 0; }

  // waitpid while stopping: past the deadline, every stopped job's group
  // gets SIGKILL. -1 (EINTR) when a signal came, for the caller to see.
  pid_t wait_stopping(int& status) {
    for (;;) {
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid != 0) return pid;
      if (core::monotonic_now() > deadline_) kill_groups();
      if (usleep(20'000) != 0 && errno == EINTR) return -1;
    }
  }

  void kill_groups() {
    for (pid_t g : groups_) kill(-g, SIGKILL);
  }

  // Once every job has ended: what is left of their groups (a wrapper's
  // training that outlived it) ends too, SIGKILL at the deadline.
  void end_groups() {
    const auto left = [this] {
      return std::any_of(groups_.begin(), groups_.end(), [](pid_t g) { return kill(-g, 0) == 0; });
    };
    // Bounded: a zombie no one reaps (a container's init that does not)
    // still answers kill(0).
    while (left() && core::monotonic_now() < deadline_ + 2) {
      if (core::monotonic_now() > deadline_) kill_groups();
      usleep(20'000);
    }
    groups_.clear();
  }

  double deadline_ = 0;        // monotonic seconds; 0 until stop_all
  std::vector<pid_t> groups_;  // the process groups of stopped jobs
  struct Running {
    std::string id;
    double start = 0;
  };
  int slots_;
  std::map<pid_t, Running> jobs_;
};

}  // namespace

void make_log_folder(const std::filesystem::path& dir) {
  if (dir.empty()) return;
  core::check_output_folder(dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec))
    fail(ErrorKind::kUsage, "cannot create the log folder '{}': {}; choose another place (--logs)",
         core::escape_for_display(dir.string()),
         ec ? ec.message() : std::string("it is not a folder"));
  // A job's log is a regular file: a FIFO there would block the job
  // before it runs, a folder send its output into the study's own
  // (thirty-fourth hunt, A-A). Refused before the study records anything.
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".log") continue;
    struct stat st {};
    const bool ok = ::stat(e.path().c_str(), &st) == 0 ? S_ISREG(st.st_mode) : errno == ENOENT;
    if (!ok)
      fail(ErrorKind::kUsage,
           "the log folder '{}' holds '{}', which is {}: a job's log goes there; remove it, or "
           "choose another place (--logs)",
           core::escape_for_display(dir.string()),
           core::escape_for_display(e.path().filename().string()),
           errno == ELOOP ? "a link that loops" : core::file_kind(st.st_mode));
  }
}

void enter_job(const Job& job, pid_t parent) {
  // Die with the study: SIGTERM lets the trainer checkpoint and stop.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  // Never blocks (a FIFO put there since make_log_folder looked), and a
  // job whose log is no regular file does not run: its output is not the
  // study's (exit 126, said on the study's stderr).
  int fd = open(job.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string line =
        fmt::format("trainscope: job {} did not run: its log '{}' {}\n", job.id, job.log.string(),
                    fd < 0 ? fmt::format("cannot be opened: {}", std::strerror(errno))
                           : fmt::format("is {}, not a regular file", core::file_kind(st.st_mode)));
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
    _exit(126);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  close(fd);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull > STDIN_FILENO) dup2(devnull, STDIN_FILENO), close(devnull);
  for (const auto& [k, v] : job.env) setenv(k.c_str(), v.c_str(), 1);
}

std::unique_ptr<Executor> local_executor(int slots) {
  if (slots < 1) fail(ErrorKind::kUsage, "workers is {}: use at least 1", slots);
  return std::make_unique<LocalExecutor>(slots);
}

}  // namespace trainscope::study
