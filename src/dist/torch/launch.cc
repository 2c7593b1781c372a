// The local launcher of `train --nproc N` (launch.h). It hosts the
// rendezvous (a c10d TCPStore server on 127.0.0.1, port 0: the kernel picks
// a free one, so there is no fixed port to collide on) and watches the
// ranks: the first that fails ends the others.
#include "trainscope/dist/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/world.h"

namespace trainscope::dist {
using core::ErrorKind;
using core::fail;

namespace {

// The ranks, for the signal handler: a stop asked of the launcher (SIGINT,
// SIGTERM) is passed on to every rank as SIGTERM (they agree on the step to
// stop at); a second one kills them.
pid_t g_pids[256];
volatile std::sig_atomic_t g_started = 0, g_signals = 0;

void on_signal(int) {
  const int sig = g_signals == 0 ? SIGTERM : SIGKILL;
  g_signals = 1;
  for (int r = 0; r < g_started; ++r) kill(g_pids[r], sig);
}

pid_t start_rank(const std::vector<std::string>& argv, int rank, int size, int port) {
  std::vector<char*> args = core::exec_argv(argv);
  const pid_t pid = fork();
  if (pid < 0) fail(ErrorKind::kRuntime, "cannot start rank {}: {}", rank, std::strerror(errno));
  if (pid == 0) {
    setenv(kRankVar, std::to_string(rank).c_str(), 1);
    setenv(kSizeVar, std::to_string(size).c_str(), 1);
    setenv(kAddrVar, "127.0.0.1", 1);
    setenv(kPortVar, std::to_string(port).c_str(), 1);
    setenv(kLauncherVar, "1", 1);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
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
    if (!done[r]) kill(pids[r], SIGTERM);
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

}  // namespace

LaunchOutcome launch(const LaunchOptions& o) {
  c10d::TCPStoreOptions so;
  so.port = 0;
  so.isServer = true;
  so.waitWorkers = false;
  so.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  LaunchOutcome out;
  std::vector<bool> done(static_cast<size_t>(o.nproc), false);
  for (int r = 0; r < o.nproc; ++r) {
    out.pids.push_back(start_rank(o.argv[static_cast<size_t>(r)], r, o.nproc, store->getPort()));
    g_pids[r] = out.pids.back();
    g_started = r + 1;
  }
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
  if (store->check({"run"})) {
    auto v = store->get("run");
    out.run_uuid.assign(v.begin(), v.end());
  }
  return out;
}

}  // namespace trainscope::dist
