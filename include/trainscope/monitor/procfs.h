// Readers of Linux /proc for the resource monitor. Each takes the /proc root
// so tests can point it at snapshots; all return zeros for what is missing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace trainscope::monitor {

// One process (or a tree's sum, read_tree) as /proc shows it at one
// moment. alive is false for a zombie or a process /proc no longer has.
struct ProcessStat {
  int64_t pid = 0, ppid = 0;
  double utime_s = 0, stime_s = 0;  // CPU seconds (user, system)
  int64_t threads = 0;
  int64_t rss_bytes = 0;
  int64_t peak_rss_bytes = 0;               // VmHWM
  int64_t read_bytes = 0, write_bytes = 0;  // storage I/O (/proc/PID/io)
  bool alive = false;
};

// CPU time in clock ticks since boot: busy (all but idle and iowait) and
// total; rates come from the differences of two readings.
struct CpuTimes {
  double busy = 0, total = 0;  // jiffies
};

// The machine as /proc shows it at one moment: every CPU (all, then each
// core), memory and network counters since boot.
struct SystemStat {
  CpuTimes all;
  std::vector<CpuTimes> cores;
  int64_t mem_total_bytes = 0, mem_available_bytes = 0;
  int64_t net_rx_bytes = 0, net_tx_bytes = 0;  // all interfaces but lo
};

// The process `pid` from <proc>/PID/{stat,status,io}; a process that is
// gone reads as all zeros with alive false. Reads files only: any thread.
ProcessStat read_process(int64_t pid, const std::filesystem::path& proc = "/proc");
// The process and all its descendants (a snapshot of /proc).
std::vector<int64_t> process_tree(int64_t root, const std::filesystem::path& proc = "/proc");
// Sum over a process tree, but peak_rss_bytes: the largest single process's
// VmHWM (a floor of the tree's peak; summing them would count peaks reached
// at different moments together). The sampler's proc/peak_rss_mib is the
// larger of that and the largest tree RSS sampled.
ProcessStat read_tree(int64_t root, const std::filesystem::path& proc = "/proc");
// The machine from <proc>/{stat,meminfo,net/dev}; what is missing reads as
// 0. Reads files only: any thread.
SystemStat read_system(const std::filesystem::path& proc = "/proc");

}  // namespace trainscope::monitor
