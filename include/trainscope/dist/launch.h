// Starting the ranks of a training on this machine (`train --nproc N`):
// a rendezvous store on a free loopback port, N processes that find it in
// their environment, and one outcome when any of them fails.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace trainscope::dist {

// What launch() starts: nproc ranks, rank r running argv[r] (argv holds
// nproc commands).
struct LaunchOptions {
  int nproc = 2;
  // The command of rank r: argv_of(r), argv[0] the program.
  std::vector<std::vector<std::string>> argv;
  double timeout_s = 300;  // the rendezvous store's
  double grace_s = 10;     // between SIGTERM and SIGKILL for the survivors
  // When set, each rank is a fork of this process that runs in_process(its
  // argv) and exits with what it returns, instead of exec'ing argv[0]: a
  // study's warm worker has libtorch loaded and the dataset decoded, and
  // its ranks take both from it. The ranks are forked before the
  // rendezvous store starts its thread and are sent its port through a
  // pipe, so this process forks with one thread, as a warm worker must.
  std::function<int(const std::vector<std::string>& argv)> in_process;
};

// How the ranks ended, once every one has been reaped.
struct LaunchOutcome {
  int exit_code = 0;     // rank 0's, else the first failed rank's (128 + signal when killed)
  int failed_rank = -1;  // the first rank that failed, -1: none
  std::string what;      // how it failed: "exited with code 3", "was killed by signal 9 (SIGKILL)"
  std::string run_uuid;  // rank 0's run, when it got that far
  // the ranks' process IDs, in rank order (all reaped by then)
  std::vector<int> pids;
  // Each rank's error line, as it would have printed it ("trainscope:
  // ...\n"; kErrorFdVar), in rank order; "" for a rank that printed none.
  std::vector<std::string> errors;
  // The first stop this launcher was asked (SIGINT, SIGTERM, SIGHUP), passed
  // on to the ranks; 0: none. A rank that then ends before it could stop
  // at a step (while it starts or meets the others) ended by the user's
  // signal, and its run did not fail.
  int signal = 0;
};

// Starts the ranks and waits for them. Each rank gets SIGTERM when this
// process dies. When one fails (a non-zero exit, a
// signal), the others get SIGTERM, then SIGKILL after grace_s, so that no
// rank waits for a dead one until a collective's timeout.
LaunchOutcome launch(const LaunchOptions& options);

}  // namespace trainscope::dist
