// The Slurm executor: job arrays through sbatch, their tasks followed with
// squeue and scontrol (no accounting database needed).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/study/executor.h"

namespace trainscope::study {

using core::ErrorKind;
using core::fail;

namespace {

struct Output {
  int code = -1;
  std::string out;  // stdout and stderr
};

// Runs a program (no shell) with `env` added to its environment and collects
// what it prints.
Output run(const std::vector<std::string>& argv,
           const std::map<std::string, std::string>& env = {}) {
  int fds[2];
  if (pipe(fds) != 0) fail(ErrorKind::kRuntime, "cannot run {}: no pipe", argv[0]);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args = core::exec_argv(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  Output o;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) o.out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.empty() ? "no output" : line;
}

// What goes into the sbatch script's #SBATCH lines and its task list is one
// line: a newline in a log folder ("x\nrm -rf ~") would start a command of
// its own, one in a run name would shift every task's name after it.
void require_one_line(const char* what, const std::string& value) {
  if (std::none_of(value.begin(), value.end(),
                   [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    return;
  fail(ErrorKind::kUsage,
       "{} '{}' holds a control character (a newline?) and cannot go into a Slurm script; "
       "rename it",
       what, core::escape_for_display(value));
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "KEY=VALUE" of one `scontrol -o show job` line.
std::string field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return {};
  const size_t from = at + key.size() + 2;
  return line.substr(from, line.find(' ', from) - from);
}

struct Array {
  std::string job_id;
  std::vector<Job> jobs;  // task i runs jobs[i]
  std::set<size_t> open;  // tasks not seen ending yet
  double submitted = 0;
};

class SlurmExecutor : public Executor {
 public:
  explicit SlurmExecutor(SlurmOptions o) : o_(std::move(o)) {}
  ~SlurmExecutor() override = default;

  // Slurm queues what the cluster cannot run yet: hand it everything.
  int slots() const override { return 1 << 20; }
  // Started and not yet reported ended by wait_any().
  int running() const override {
    size_t n = pending_.size() + ended_.size();
    for (const auto& a : arrays_) n += a.open.size();
    return static_cast<int>(n);
  }
  void start(const Job& job) override { pending_.push_back(job); }

  std::optional<JobEnd> wait_any() override {
    if (!pending_.empty()) submit();
    while (ended_.empty() && running() > 0) {
      poll();
      if (ended_.empty())
        std::this_thread::sleep_for(std::chrono::duration<double>(o_.poll_seconds));
    }
    if (ended_.empty()) return std::nullopt;
    JobEnd e = ended_.front();
    ended_.pop_front();
    return e;
  }

  void stop_all() override {
    for (const auto& a : arrays_)
      if (!a.open.empty()) run({"scancel", "--signal=TERM", "--full", a.job_id});
  }

  // Array job ids submitted so far, for `study status`.
  std::vector<std::string> job_ids() const {
    std::vector<std::string> out;
    for (const auto& a : arrays_) out.push_back(a.job_id);
    return out;
  }

 private:
  void submit() {
    std::filesystem::create_directories(o_.dir);
    const auto stem = o_.dir / fmt::format("array-{}", arrays_.size() + 1);
    const auto list = std::filesystem::path(stem.string() + "-list.txt");
    for (const auto& j : pending_) require_one_line("planned run", j.id);
    {
      std::ofstream out(list);
      for (const auto& j : pending_) out << j.id << "\n";
    }
    const auto script = std::filesystem::path(stem.string() + ".sbatch");
    std::ofstream(script) << slurm_script(o_, list, pending_.size());
    Output o = run({"sbatch", "--parsable", script.string()}, o_.environment);
    if (o.code != 0) {
      if (o.out.find("invalid partition") != std::string::npos)
        fail(ErrorKind::kUsage, "Slurm partition '{}' does not exist (sinfo lists them)",
             o_.partition);
      fail(ErrorKind::kRuntime, "sbatch refused {}: {}", script.string(), first_line(o.out));
    }
    Array a{first_line(o.out).substr(0, first_line(o.out).find(';')), {}, {}, core::unix_now()};
    for (size_t i = 0; i < pending_.size(); ++i) a.open.insert(i);
    a.jobs.assign(pending_.begin(), pending_.end());
    pending_.clear();
    if (o_.on_submit) o_.on_submit(a.job_id);
    arrays_.push_back(std::move(a));
  }

  // Tasks squeue no longer lists have ended; scontrol tells how.
  void poll() {
    for (auto& a : arrays_) {
      if (a.open.empty()) continue;
      Output q = run({"squeue", "-h", "-r", "-j", a.job_id, "-o", "%K"});
      if (q.code != 0 && core::unix_now() - a.submitted < 5) continue;  // not known yet
      std::set<size_t> listed;
      std::istringstream in(q.out);
      for (std::string t; in >> t;)
        if (t.find_first_not_of("0123456789") == std::string::npos) listed.insert(std::stoul(t));
      for (auto it = a.open.begin(); it != a.open.end();) {
        if (listed.count(*it)) {
          ++it;
          continue;
        }
        ended_.push_back(task_end(a, *it));
        it = a.open.erase(it);
      }
    }
  }

  JobEnd task_end(const Array& a, size_t task) {
    Output s = run({"scontrol", "-o", "show", "job", fmt::format("{}_{}", a.job_id, task)});
    JobEnd e{a.jobs[task].id, 0, 0, 0};
    const std::string state = field(" " + s.out, "JobState");
    const std::string code = field(" " + s.out, "ExitCode");  // "EXIT:SIGNAL"
    if (s.code == 0 && !code.empty()) {
      e.exit_code = std::atoi(code.c_str());
      e.signal = std::atoi(code.substr(code.find(':') + 1).c_str());
    }
    if (state != "COMPLETED" && e.exit_code == 0 && e.signal == 0) e.exit_code = 1;  // cancelled
    e.seconds = core::unix_now() - a.submitted;
    return e;
  }

  SlurmOptions o_;
  std::deque<Job> pending_;
  std::vector<Array> arrays_;
  std::deque<JobEnd> ended_;
};

}  // namespace

std::string slurm_script(const SlurmOptions& o, const std::filesystem::path& list, size_t tasks) {
  require_one_line("the study's log folder", o.dir.string());
  // A partition is one word: "gpu --wrap=..." would add options.
  if (!std::all_of(o.partition.begin(), o.partition.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '.';
      }))
    fail(ErrorKind::kUsage,
         "Slurm partition '{}' is not a partition name (letters, digits, '_', '-', '.')",
         core::escape_for_display(o.partition));
  std::string s = "#!/bin/bash\n# Written by trainscope: one task per planned training.\n";
  s += "#SBATCH --job-name=trainscope-study\n";
  s += fmt::format("#SBATCH --array=0-{}{}\n", tasks - 1,
                   o.array_parallelism > 0 ? fmt::format("%{}", o.array_parallelism) : "");
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  s += "#SBATCH --requeue\n#SBATCH --ntasks=1\n";
  s += "#SBATCH --output=" + (o.dir / "task-%A_%a.log").string() + "\n";
  s += "# A preempted task is requeued and continues its run from its checkpoint.\n";
  s += "name=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" " + quoted(list.string()) + ")\n";
  s += "exec";
  for (const auto& a : o.task_command) s += " " + quoted(a);
  s += " \"$name\"\n";
  return s;
}

std::map<std::string, int> slurm_queue(const std::vector<std::string>& job_ids) {
  std::map<std::string, int> out;
  if (job_ids.empty()) return out;
  Output o =
      run({"squeue", "-h", "-r", "-j", fmt::format("{}", fmt::join(job_ids, ",")), "-o", "%T"});
  // squeue refuses ids it has forgotten (all their tasks ended long ago).
  if (o.code != 0 && o.out.find("Invalid job id") != std::string::npos) return out;
  if (o.code != 0) fail(ErrorKind::kRuntime, "squeue failed: {}", first_line(o.out));
  std::istringstream in(o.out);
  for (std::string state; in >> state;) ++out[state];
  return out;
}

void check_slurm(const std::string& partition) {
  Output o = run({"sinfo", "-h", "-o", "%P"});
  if (o.code != 0)
    fail(ErrorKind::kRuntime, "cannot reach Slurm (sinfo: {}); is SLURM_CONF right?",
         first_line(o.out));
  std::istringstream in(o.out);
  std::vector<std::string> names;
  for (std::string p; in >> p;) names.push_back(p.back() == '*' ? p.substr(0, p.size() - 1) : p);
  if (!partition.empty() && std::find(names.begin(), names.end(), partition) == names.end())
    fail(ErrorKind::kUsage, "Slurm partition '{}' does not exist; this cluster has: {}",
         core::escape_for_display(partition), fmt::format("{}", fmt::join(names, ", ")));
}

std::unique_ptr<Executor> slurm_executor(SlurmOptions options) {
  return std::make_unique<SlurmExecutor>(std::move(options));
}

}  // namespace trainscope::study
