// How many CPUs this process may use: its affinity mask, the physical cores
// among those CPUs, and its cgroup's CPU quota. `compute.threads: auto` and
// parallel study workers size themselves from it.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <string_view>

namespace trainscope::env {

// What cpu_budget() found: a plain value.
struct CpuBudget {
  int logical = 0;   // CPUs in the affinity mask
  int physical = 0;  // distinct (package, core) pairs among them
  double quota = 0;  // cgroup CPU quota in CPUs; 0 when unlimited
  // Physical cores, no more than the quota (rounded down, at least 1).
  int threads() const;
};

// The budget of this process. `root` is "/" on a live system, or a folder
// holding sys/ and proc/ snapshots in tests (the affinity mask is then all
// online CPUs).
CpuBudget cpu_budget(const std::filesystem::path& root = "/");

// "0-3,8,10-11" -> {0,1,2,3,8,10,11} (the kernel's CPU list format).
std::set<int> parse_cpu_list(std::string_view text);
// A cgroup v2 cpu.max line ("max 100000", "150000 100000") in CPUs; 0 for
// no limit or unreadable text.
double parse_cpu_max(std::string_view text);

}  // namespace trainscope::env
