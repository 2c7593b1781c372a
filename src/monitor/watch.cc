#include "trainscope/monitor/watch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "keeper.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/monitor/procfs.h"
#include "trainscope/store/accept.h"

namespace fs = std::filesystem;

namespace trainscope::monitor {
using core::ErrorKind;
using core::fail;

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_keeper = 0;     // holds the program's tree (keeper.h)
volatile sig_atomic_t g_forwarded = 0;  // the last signal passed on
void forward_signal(int sig) {
  g_forwarded = sig;
  if (g_child > 0) core::stop_signal(g_child, sig);
}

// The processes below this one but the keeper: what the program started
// and left (re-parented to the keeper, which reaps them).
std::vector<int64_t> left_below() {
  std::vector<int64_t> left = process_tree(getpid());
  std::erase_if(left, [](int64_t p) { return p == getpid() || p == g_keeper; });
  return left;
}

// After a signal passed on to the program ended it: the processes it
// started that outlived it (`sh -c 'python train.py'` killed leaves the
// training), re-parented to this process (a child subreaper, set before the
// program starts), get the same signal, then SIGKILL after `grace_s`; each
// is reaped. A run never ends with its program's tree running unwatched.
void end_left_behind(int sig, double grace_s = 5) {
  const double deadline = core::monotonic_now() + grace_s;
  std::set<int64_t> signalled;
  for (;;) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const std::vector<int64_t> left = left_below();
    if (left.empty()) return;
    const bool late = core::monotonic_now() > deadline;
    for (int64_t p : left)
      if (late || signalled.insert(p).second) core::stop_signal(p, late ? SIGKILL : sig);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// After the program exited by itself: the processes it started and left
// running (`sh -c 'server &'`), re-parented to this process, end with it,
// as a Slurm step's or a container's do: SIGTERM, then SIGKILL after 5 s
// (end_left_behind), with a warning naming how many. The run never ends
// with part of its program still running unwatched, and watch never waits
// on a daemon. Returns how many were left behind.
size_t end_what_was_left() {
  g_child = 0;  // the program's pid is reaped and may be reused: signal no one by it
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  const std::vector<int64_t> left = left_below();
  if (left.empty()) return 0;
  core::log_warn(
      "watch: the program exited but left {} process(es) running (pid {}); they end with it "
      "(SIGTERM, then SIGKILL after 5 s): a program that runs its work in the background "
      "must wait for it",
      left.size(), left.front());
  end_left_behind(SIGTERM);
  return left.size();
}

// Forwards SIGINT, SIGTERM and SIGHUP (the terminal closed) to the child
// while alive: the program ends as it chooses and its run is recorded,
// never left running with its program orphaned. Installed before the run
// is recorded: a signal that arrives before the program's pid is known
// (attach) is kept and passed on as soon as it is, never the death of
// watch with its run left running.
class SignalForwarding {
 public:
  SignalForwarding() {
    g_child = 0;
    g_forwarded = 0;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, forward_signal);
  }
  void attach(pid_t child) {
    g_child = child;  // first: a signal from now on reaches it from the handler
    const int early = g_forwarded;
    if (early != 0) core::stop_signal(child, early);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;
  ~SignalForwarding() {
    g_child = 0;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  }
};

struct Pipes {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
};

// This process's environment with `extra` set (replacing the same names).
std::vector<std::string> child_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (!extra.count(std::string(kv.substr(0, kv.find('='))))) env.emplace_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

// Starts `exe` under a keeper (keeper.h) with stdout and stderr on fresh
// pipes, and with TRAINSCOPE_RUN_ID and TRAINSCOPE_STORE naming its run, so
// that a script can attach records of its own to it. Its signals are as a
// shell leaves them (SIGPIPE at its default, nothing blocked that
// trainscope blocked). Nothing of it outlives watch: the program gets
// SIGTERM when its keeper dies, and the keeper ends the program's whole
// tree when watch dies, even by SIGKILL.
detail::Kept spawn(const std::string& exe, std::vector<std::string> args, Pipes& p,
                   const std::map<std::string, std::string>& extra_env) {
  if (pipe2(p.out, O_CLOEXEC) != 0 || pipe2(p.err, O_CLOEXEC) != 0)
    fail(ErrorKind::kRuntime, "cannot create pipes: {}", std::strerror(errno));
  std::vector<char*> argv = core::exec_argv(args);
  const std::vector<std::string> env = child_environment(extra_env);
  std::vector<char*> envp = core::exec_argv(env);
  detail::Kept kept = detail::start_kept(exe, argv, envp, p.out[1], p.err[1]);
  close(p.out[1]);
  close(p.err[1]);
  g_keeper = kept.keeper;
  return kept;
}

// How long the output is read after the program exited, for what it
// wrote last; a process it started that keeps the output open (a daemon,
// `sleep 90 &`) is not waited for beyond this.
constexpr double kDrainSeconds = 1.0;

// When the program exited (monotonic seconds; 0 while it runs), shared by
// the pumps.
struct Drain {
  std::atomic<double> exited_at{0};
  std::atomic<bool> held{false};  // the output was still open when reading stopped
};

// Copies what arrives on `fd` to `echo` and to `file` byte for byte, and
// hands each line to the parser (MetricLineSplitter: memory and time stay
// linear whatever the program prints), until the end of the output or
// kDrainSeconds after the program exited. An echo that fails (our stdout
// read by `| head -1`, closed, or full) drops the rest of the echo, never
// the reading: the program is not blocked, and the file and the parser get
// every byte (core/output.h; main says once that the output was cut).
// What a pump could not keep of the output in its file ($TMPDIR full, past
// `ulimit -f`): the reason ("" when it kept every byte) and every byte seen.
struct Kept {
  std::string why;
  uint64_t seen = 0;
};

void pump(int fd, core::StdStream echo, const fs::path& file, MetricLineParser& parser,
          std::mutex& mu, Drain& drain, Kept& kept) {
  std::ofstream out(file, std::ios::binary);
  if (!out) kept.why = std::strerror(errno);
  MetricLineSplitter lines(parser, &mu);
  char buf[65536];
  for (;;) {
    const double exited = drain.exited_at.load();
    if (exited > 0 && core::monotonic_now() - exited > kDrainSeconds) {
      drain.held = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (core::write_standard(echo, std::string_view(buf, static_cast<size_t>(n))))
      core::flush_standard(echo);
    kept.seen += static_cast<uint64_t>(n);
    // A file that cannot take more keeps what it has, said at the end
    // (thirty-fourth hunt, A-C: cut in silence, recorded as the whole).
    if (kept.why.empty() && !out.write(buf, n).flush()) kept.why = std::strerror(errno);
    lines.feed(std::string_view(buf, static_cast<size_t>(n)));
  }
  if (kept.why.empty() && !out.flush()) kept.why = std::strerror(errno);
  lines.finish();
  close(fd);
}

// "stdout: its first 204800 of 1288895 bytes (File too large)", or "" when
// the file holds every byte.
std::string cut_output(const char* name, const fs::path& file, const Kept& kept) {
  if (kept.why.empty()) return {};
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  return fmt::format("{}: its first {} of {} bytes ({})", name, ec ? 0 : size, kept.seen, kept.why);
}

// The program's exit code, or 128 + the signal that killed it (`signal`
// set to it).
}  // namespace

std::string signal_name(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return fmt::format("{} (SIG{})", signal, abbrev ? abbrev : "?");
}

namespace {

// The program's wait status when its keeper died before it said (killed,
// by the OOM killer say): the program got SIGTERM from that death
// (keeper.h) and, re-parented to this subreaper, is waited for here, with
// SIGKILL after 5 s. Its status was the keeper's SIGKILL, and the program,
// still running, a process "left behind" (twenty-seventh hunt, B-D2).
int status_without_keeper(pid_t program) {
  core::log_warn(
      "watch: its keeper process was killed before the program ended (the out-of-memory killer "
      "may pick it); the program is stopped (SIGTERM, then SIGKILL after 5 s)");
  const double deadline = core::monotonic_now() + 5;
  bool killed = false;
  for (int status = 0;;) {
    const pid_t got = waitpid(program, &status, WNOHANG);
    if (got == program) return status;
    if (got < 0 && errno != EINTR) return SIGTERM;  // reaped elsewhere: as its keeper left it
    if (!killed && core::monotonic_now() > deadline) {
      core::stop_signal(program, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int wait_exit_code(const detail::Kept& kept, int& signal, bool& keeper_lost) {
  const std::optional<int> said = detail::wait_kept(kept);
  keeper_lost = !said;
  const int status = said ? *said : status_without_keeper(kept.program);
  signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Who the run is (instrument/run_identity.h): the options given, then the
// environment's, then the program's file name (as it is, not made unique)
// and "watch". In a command study's environment, the planned child (watch
// is then the study's command; its program does not claim the same run:
// program_environment).
instrument::RunIdentity identity_of(const WatchOptions& o) {
  instrument::RunIdentity id;
  id.name = o.name;
  id.default_name = store::derived_name(fs::path(o.command.front()).filename().string(), "watch");
  id.unique_default = false;
  id.experiment = o.experiment;
  id.default_experiment = "watch";
  id.tags = o.tags;
  id.command_line = o.command_line;
  if (id.command_line.empty()) id.command_line = core::shell_command(o.command);
  return instrument::resolve_identity(std::move(id), instrument::read_run_environment());
}

std::unique_ptr<store::RunRecorder> start_run(std::shared_ptr<store::Store> store,
                                              const WatchOptions& o,
                                              const instrument::RunIdentity& id) {
  auto run = instrument::start_run(std::move(store), id, env::capture_machine());
  if (!o.params.empty()) run->set_params(o.params);
  run->set_tag("watch.command", id.command_line);
  return run;
}

void record_outcome(store::RunRecorder& run, WatchResult& r, const MetricLineParser& parser,
                    const fs::path& tmp) {
  run.log_metric("exit_code", r.exit_code, 0);
  run.set_tag("exit_code", std::to_string(r.exit_code));
  if (r.signal > 0) run.set_tag("killed_by_signal", signal_name(r.signal));
  if (r.output_held) run.set_tag("output.held_open_by_a_descendant", "true");
  for (const auto& cut : r.output_cut)
    if (!cut.empty()) run.set_tag("watch." + cut.substr(0, 6) + "_cut", cut.substr(8));
  if (r.left_behind > 0) run.set_tag("watch.left_behind", std::to_string(r.left_behind));
  if (r.keeper_lost) run.set_tag("watch.keeper_killed", "true");
  r.metric_lines = parser.parsed();
  r.malformed_lines = parser.malformed();
  r.overlong_lines = parser.overlong();
  r.param_lines = parser.param_lines();
  run.set_tag("metric_lines.parsed", std::to_string(r.metric_lines));
  run.set_tag("metric_lines.malformed", std::to_string(r.malformed_lines));
  run.set_tag("metric_lines.overlong", std::to_string(r.overlong_lines));
  run.set_tag("metric_lines.params", std::to_string(r.param_lines));
  if (r.malformed_lines > 0) {
    r.first_malformed = core::escape_cut(parser.first_malformed(), 200);
    r.first_malformed_reason = parser.first_malformed_reason();
    run.set_tag("metric_lines.first_malformed", r.first_malformed);
    run.set_tag("metric_lines.first_malformed_reason", r.first_malformed_reason);
  }
  run.add_artifact(tmp / "stdout.txt", "stdout", "stdout.txt");
  run.add_artifact(tmp / "stderr.txt", "stderr", "stderr.txt");
}

// How the run ends: finished when the program exited 0; stopped when it did
// not after watch was told to stop (SIGINT, SIGTERM, SIGHUP passed on), as a
// training stopped by Ctrl-C is, so that a study resumes it rather than
// counting it failed (twenty-eighth hunt, B-D4); failed otherwise.
store::RunStatus end_status(const WatchResult& r) {
  if (r.exit_code == 0) return store::RunStatus::kFinished;
  return g_forwarded != 0 ? store::RunStatus::kStopped : store::RunStatus::kFailed;
}

}  // namespace

std::string find_program(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos)
    return fs::is_regular_file(name, ec) && access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return {};
}

// What the program's environment adds: its run, and, when watch is a
// study's planned child, the study's variables emptied (empty is unset), so
// that a program calling trainscope.start_run() records a run of its own
// rather than a second run of the same planned name.
std::map<std::string, std::string> program_environment(store::RunRecorder& run,
                                                       const instrument::RunIdentity& id) {
  std::map<std::string, std::string> env = {{"TRAINSCOPE_RUN_ID", run.uuid()},
                                            {"TRAINSCOPE_STORE", run.store().describe()}};
  if (id.planned)
    for (const char* name : {"TRAINSCOPE_PARENT", "TRAINSCOPE_RUN_NAME", "TRAINSCOPE_PLANNED"})
      env[name] = "";
  return env;
}

namespace {

// A program exec cannot start, found before any run is recorded, as
// docs/monitor.md promises (thirtieth hunt, B-D3: a script without #! or
// with a missing interpreter was recorded failed, exit 127, exec's reason
// lost): a #! line naming no program, or text that is no ELF program and
// has no #! line. A file this process may not read is left to exec.
void check_runnable(const std::string& exe, const std::string& given) {
  std::ifstream in(exe, std::ios::binary);
  std::string head(256, '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(head.size())) && in.gcount() == 0) return;
  head.resize(static_cast<size_t>(in.gcount()));
  const std::string shown = core::escape_for_display(given);
  if (head.starts_with("#!")) {
    const size_t from = head.find_first_not_of(" \t", 2);
    const size_t to = from == std::string::npos ? from : head.find_first_of(" \t\r\n", from);
    const std::string interpreter =
        from == std::string::npos ? ""
                                  : head.substr(from, to == std::string::npos ? to : to - from);
    std::error_code ec;
    if (interpreter.empty() || !fs::is_regular_file(interpreter, ec) ||
        access(interpreter.c_str(), X_OK) != 0)
      fail(ErrorKind::kCommandNotFound,
           "'{}' cannot run: its #! line names '{}', which is not a program here; fix the line, "
           "or put an interpreter first (watch -- INTERPRETER {})",
           shown, core::escape_for_display(interpreter), shown);
    return;
  }
  const bool text = std::none_of(head.begin(), head.end(), [](char c) { return c == '\0'; });
  if (!head.starts_with("\177ELF") && text)
    fail(ErrorKind::kCommandNotFound,
         "'{}' cannot run: it is a script without a #! line; add one (#!/bin/sh) or give its "
         "interpreter (watch -- sh {})",
         shown, shown);
}

}  // namespace

WatchResult watch(std::shared_ptr<store::Store> store, const WatchOptions& o) {
  if (o.command.empty()) fail(ErrorKind::kUsage, "watch: no command given");
  const instrument::RunIdentity id = identity_of(o);  // a bad $TRAINSCOPE_TAGS: before anything
  const std::string exe = find_program(o.command.front());
  std::error_code ec;
  if (exe.empty() && fs::is_directory(o.command.front(), ec))
    fail(ErrorKind::kCommandNotFound, "command not found: '{}' is a folder, not a program",
         core::escape_for_display(o.command.front()));
  if (exe.empty())
    fail(ErrorKind::kCommandNotFound, "command not found: '{}' (not an executable file in $PATH)",
         core::escape_for_display(o.command.front()));
  check_runnable(exe, o.command.front());
  // The output's folder first: a $TMPDIR that cannot hold it leaves no run.
  const fs::path tmp =
      fs::temp_directory_path(ec) / ("trainscope-watch-" + core::new_uuid().substr(0, 8));
  if (ec || !fs::create_directories(tmp, ec))
    fail(ErrorKind::kRuntime,
         "watch: cannot create '{}' for the output: {}; set TMPDIR to a "
         "writable folder",
         core::escape_for_display(tmp.string()), ec ? ec.message() : "it exists");
  SignalForwarding forwarding;
  auto run = start_run(std::move(store), o, id);
  WatchResult r;
  r.run_uuid = run->uuid();
  r.run_name = run->info().name;
  Pipes pipes;
  // What the program starts and leaves behind when it ends stays below
  // this process (its keeper's, or this one's should the keeper die),
  // never init's (end_left_behind).
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  detail::Kept kept = spawn(exe, o.command, pipes, program_environment(*run, id));
  const pid_t pid = kept.program;
  forwarding.attach(pid);
  SamplerOptions so;
  so.interval_s = o.interval_s;
  so.pid = pid;
  so.carbon_kg_per_kwh = o.carbon_kg_per_kwh;
  ResourceSampler sampler(*run, so);
  MetricLineParser parser(*run, o.params);
  std::mutex mu;
  {
    Drain drain;
    Kept kept_out, kept_err;
    std::thread t_out(pump, pipes.out[0], core::StdStream::kStdout, tmp / "stdout.txt",
                      std::ref(parser), std::ref(mu), std::ref(drain), std::ref(kept_out));
    std::thread t_err(pump, pipes.err[0], core::StdStream::kStderr, tmp / "stderr.txt",
                      std::ref(parser), std::ref(mu), std::ref(drain), std::ref(kept_err));
    r.exit_code = wait_exit_code(kept, r.signal, r.keeper_lost);
    if (g_forwarded != 0 || r.keeper_lost)
      end_left_behind(g_forwarded != 0 ? g_forwarded : SIGTERM);
    else
      r.left_behind = end_what_was_left();
    detail::release_kept(kept);
    g_keeper = 0;
    drain.exited_at = core::monotonic_now();
    t_out.join();
    t_err.join();
    r.output_held = drain.held;
    r.output_cut = {cut_output("stdout", tmp / "stdout.txt", kept_out),
                    cut_output("stderr", tmp / "stderr.txt", kept_err)};
  }
  r.energy = sampler.stop();
  r.samples = sampler.samples();
  record_outcome(*run, r, parser, tmp);
  fs::remove_all(tmp, ec);
  run->end(end_status(r));
  return r;
}

}  // namespace trainscope::monitor
