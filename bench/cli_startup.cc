// Startup cost of the `trainscope` executable: `--version` and `runs list`
// over a store of 10,000 runs, whole processes, timed from fork to exit.
//
//   build/bench/cli_startup [--rounds N] [BINARY...]
//
// With several binaries (say, this build and an older one) the commands run
// interleaved, A B A B ..., rotating which goes first each round, so that a
// slow spell of a shared machine hits them alike. Prints the median,
// minimum and maximum wall time, user and system CPU and peak RSS of each
// (binary, command). The store is built once (about a minute) and kept in
// $TMPDIR/trainscope-cli-startup-<schema>.db.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench_stores.h"

namespace fs = std::filesystem;

namespace {

struct Sample {
  double wall_ms, user_ms, sys_ms, rss_mib;
};

Sample run_once(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "cli_startup: '%s %s' failed\n", args[0].c_str(), args.back().c_str());
    std::exit(1);
  }
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return {wall, ms(ru.ru_utime), ms(ru.ru_stime), ru.ru_maxrss / 1024.0};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void report(const std::string& label, const std::vector<Sample>& s) {
  std::vector<double> wall, user, sys, rss;
  for (const auto& x : s) {
    wall.push_back(x.wall_ms);
    user.push_back(x.user_ms);
    sys.push_back(x.sys_ms);
    rss.push_back(x.rss_mib);
  }
  std::printf("%-60s %8.1f [%6.1f..%6.1f] %8.1f %8.1f %8.1f\n", label.c_str(), median(wall),
              *std::min_element(wall.begin(), wall.end()),
              *std::max_element(wall.begin(), wall.end()), median(user), median(sys), median(rss));
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  std::vector<std::string> binaries;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      binaries.push_back(a);
    }
  }
  if (binaries.empty()) binaries.push_back(TS_CLI_BIN);
  const std::string uri = "sqlite:" + trainscope::bench::ten_thousand_runs().string();
  std::vector<std::pair<std::string, std::vector<std::string>>> cases;
  for (const auto& b : binaries) {
    cases.push_back({b + " --version", {b, "--version"}});
    cases.push_back({b + " runs list", {b, "--store", uri, "runs", "list"}});
  }
  for (const auto& c : cases) run_once(c.second);  // warm the page cache
  std::vector<std::vector<Sample>> samples(cases.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < cases.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(r)) % cases.size();
      samples[i].push_back(run_once(cases[i].second));
    }
  std::printf("%d rounds, interleaved; %d runs in the store\n", rounds, trainscope::bench::kRuns);
  std::printf("%-60s %8s %17s %8s %8s %8s\n", "command", "wall ms", "[min..max]", "user ms",
              "sys ms", "RSS MiB");
  for (size_t i = 0; i < cases.size(); ++i) report(cases[i].first, samples[i]);
  return 0;
}
