#include "trainscope/monitor/sampler.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/env/nvml.h"
#include "trainscope/monitor/procfs.h"
#include "trainscope/monitor/rapl.h"

namespace trainscope::monitor {
using core::format_double;
using core::log_warn;
using core::monotonic_now;
using core::unix_now;
using store::RunRecorder;

constexpr double kMiB = 1024.0 * 1024.0;

struct ResourceSampler::State {
  explicit State(const SamplerOptions& o) : rapl(o.powercap_root) {}
  env::Nvml nvml;
  Rapl rapl;
  bool have_prev = false;
  double prev_time = 0;
  ProcessStat prev_proc;
  SystemStat prev_sys;
  std::vector<double> gpu_energy_start, gpu_energy_last;
  double peak_rss = 0;
  double est_cpu_j = 0;    // TDP x utilisation integral when RAPL is absent
  double gpu_power_j = 0;  // integrated power when the energy counter is absent
  int physical_cores = 1;
  double tdp = 0;

  using Log = std::function<void(const std::string&, double)>;
  // proc/rss_mib, peak_rss_mib, threads (while the tree lives), sys/mem_used_mib.
  void log_memory(const ProcessStat& proc, const SystemStat& sys, const Log& log);
  // CPU, disk and network rates since the previous sample; integrates the
  // CPU energy estimate used without RAPL.
  void log_rates(const ProcessStat& proc, const SystemStat& sys, double now, const Log& log);
  // energy/cpu_j and energy/dram_j: metered by RAPL, else the estimate.
  void log_cpu_energy(const Log& log);
  // gpu<i>/* and energy/gpu_j; returns the GPU joules since the first sample.
  double log_gpus(const std::vector<int64_t>& pids, double now, const Log& log);
};

ResourceSampler::ResourceSampler(RunRecorder& recorder, SamplerOptions options)
    : recorder_(recorder), options_(std::move(options)), state_(std::make_unique<State>(options_)) {
  if (options_.pid == 0) options_.pid = getpid();
  std::ifstream cpuinfo(options_.proc_root / "cpuinfo");
  std::stringstream ss;
  ss << cpuinfo.rdbuf();
  state_->physical_cores = std::max(1, env::parse_cpuinfo(ss.str()).physical);
  state_->tdp = options_.cpu_tdp_watts > 0 ? options_.cpu_tdp_watts : 10.0 * state_->physical_cores;
  sample_once();
  thread_ = std::thread([this] { loop(); });
}

ResourceSampler::~ResourceSampler() {
  try {
    stop();
  } catch (const std::exception& e) {
    log_warn("resource sampler: {}", e.what());
  }
}

void ResourceSampler::loop() {
  std::unique_lock lock(mu_);
  const auto interval = std::chrono::duration<double>(options_.interval_s);
  while (!stopping_) {
    if (cv_.wait_for(lock, interval, [&] { return stopping_; })) break;
    lock.unlock();
    sample_once();
    lock.lock();
  }
}

void ResourceSampler::State::log_memory(const ProcessStat& proc, const SystemStat& sys,
                                        const Log& log) {
  // A watched command that has exited has no /proc entry: its process
  // series end with its last live sample.
  if (proc.alive) {
    peak_rss = std::max(
        {peak_rss, static_cast<double>(proc.rss_bytes), static_cast<double>(proc.peak_rss_bytes)});
    log("proc/rss_mib", static_cast<double>(proc.rss_bytes) / kMiB);
    log("proc/peak_rss_mib", peak_rss / kMiB);
    log("proc/threads", static_cast<double>(proc.threads));
  }
  log("sys/mem_used_mib",
      static_cast<double>(sys.mem_total_bytes - sys.mem_available_bytes) / kMiB);
}

void ResourceSampler::State::log_rates(const ProcessStat& proc, const SystemStat& sys, double now,
                                       const Log& log) {
  const double dt = std::max(now - prev_time, 1e-6);
  const double cores = std::max<size_t>(1, sys.cores.size());
  const bool alive = proc.alive;
  // A process that left the tree takes its CPU time with it; never report
  // a negative rate for that.
  const double user = alive ? std::max(0.0, (proc.utime_s - prev_proc.utime_s) / dt * 100) : 0;
  const double sysc = alive ? std::max(0.0, (proc.stime_s - prev_proc.stime_s) / dt * 100) : 0;
  auto mibps = [&](int64_t now_bytes, int64_t then_bytes) {
    return std::max<double>(0, static_cast<double>(now_bytes - then_bytes)) / kMiB / dt;
  };
  if (alive) {
    log("proc/cpu_percent", user + sysc);
    log("proc/cpu_user_percent", user);
    log("proc/cpu_sys_percent", sysc);
    log("proc/cpu_machine_percent", (user + sysc) / static_cast<double>(cores));
    log("proc/disk_read_mibps", mibps(proc.read_bytes, prev_proc.read_bytes));
    log("proc/disk_write_mibps", mibps(proc.write_bytes, prev_proc.write_bytes));
  }
  auto busy = [](const CpuTimes& a, const CpuTimes& b) {
    double t = a.total - b.total;
    return t > 0 ? (a.busy - b.busy) / t * 100 : 0.0;
  };
  log("sys/cpu_percent", busy(sys.all, prev_sys.all));
  for (size_t i = 0; i < sys.cores.size() && i < prev_sys.cores.size(); ++i)
    log(fmt::format("sys/cpu{}_percent", i), busy(sys.cores[i], prev_sys.cores[i]));
  log("sys/net_rx_mibps",
      static_cast<double>(sys.net_rx_bytes - prev_sys.net_rx_bytes) / kMiB / dt);
  log("sys/net_tx_mibps",
      static_cast<double>(sys.net_tx_bytes - prev_sys.net_tx_bytes) / kMiB / dt);
  // Without RAPL: TDP x the process tree's share of the machine.
  est_cpu_j += tdp * std::min(1.0, (user + sysc) / 100.0 / cores) * dt;
}

void ResourceSampler::State::log_cpu_energy(const Log& log) {
  if (rapl.available()) {
    rapl.update();
    log("energy/cpu_j", rapl.package_joules());
    log("energy/dram_j", rapl.dram_joules());
  } else {
    log("energy/cpu_j", est_cpu_j);
  }
}

double ResourceSampler::State::log_gpus(const std::vector<int64_t>& pids, double now,
                                        const Log& log) {
  auto gpus = nvml.sample(pids);
  if (gpu_energy_start.empty()) {
    for (const auto& g : gpus) gpu_energy_start.push_back(g.energy_j);
    gpu_energy_last = gpu_energy_start;
  }
  double gpu_j = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const auto& g = gpus[i];
    std::string p = fmt::format("gpu{}/", i);
    if (g.util_percent >= 0) log(p + "util_percent", g.util_percent);
    if (g.mem_used_bytes >= 0) log(p + "mem_used_mib", g.mem_used_bytes / kMiB);
    if (g.mem_total_bytes >= 0) log(p + "mem_total_mib", g.mem_total_bytes / kMiB);
    if (g.power_w >= 0) log(p + "power_w", g.power_w);
    if (g.temperature_c >= 0) log(p + "temp_c", g.temperature_c);
    if (g.sm_clock_mhz >= 0) log(p + "sm_clock_mhz", g.sm_clock_mhz);
    if (g.mem_clock_mhz >= 0) log(p + "mem_clock_mhz", g.mem_clock_mhz);
    log(p + "proc_mem_mib", g.process_mem_bytes / kMiB);
    if (g.energy_j >= 0 && i < gpu_energy_start.size() && gpu_energy_start[i] >= 0) {
      gpu_j += g.energy_j - gpu_energy_start[i];
    } else if (g.power_w >= 0 && have_prev) {
      gpu_power_j += g.power_w * (now - prev_time);
    }
  }
  log("energy/gpu_j", gpu_j + gpu_power_j);
  return gpu_j + gpu_power_j;
}

void ResourceSampler::sample_once() {
  State& st = *state_;
  const double now = monotonic_now();
  const double wall = unix_now();
  const int64_t step = samples_.fetch_add(1);
  ProcessStat proc = read_tree(options_.pid, options_.proc_root);
  SystemStat sys = read_system(options_.proc_root);
  auto log = [&](const std::string& key, double v) { recorder_.log_metric(key, v, step, wall); };
  st.log_memory(proc, sys, log);
  if (st.have_prev) st.log_rates(proc, sys, now, log);
  st.log_cpu_energy(log);
  if (st.nvml.available())
    summary_.gpu_j = st.log_gpus(process_tree(options_.pid, options_.proc_root), now, log);
  if (proc.alive) st.prev_proc = proc;
  st.prev_sys = sys;
  st.prev_time = now;
  st.have_prev = true;
}

EnergySummary ResourceSampler::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return summary_;
    stopping_ = true;
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sample_once();
  State& st = *state_;
  if (st.rapl.available()) {
    summary_.cpu_j = st.rapl.package_joules();
    summary_.dram_j = st.rapl.dram_joules();
    summary_.cpu_source = "rapl";
  } else {
    summary_.cpu_j = st.est_cpu_j;
    summary_.cpu_source =
        fmt::format("estimated: TDP {:.0f} W x CPU utilisation ({})", st.tdp, st.rapl.reason());
  }
  if (!st.nvml.available()) {
    summary_.gpu_source = "none: " + st.nvml.reason();
  } else {
    summary_.gpu_source = st.gpu_power_j > 0 ? "nvml power integrated" : "nvml energy counter";
  }
  const int64_t last = samples_.load();
  recorder_.log_metric("energy/total_kwh", summary_.kwh(), last);
  recorder_.log_metric("energy/co2_kg", summary_.kwh() * options_.carbon_kg_per_kwh, last);
  recorder_.set_tag("energy.cpu.source", summary_.cpu_source);
  recorder_.set_tag("energy.gpu.source", summary_.gpu_source);
  recorder_.set_tag("energy.carbon_kg_per_kwh", format_double(options_.carbon_kg_per_kwh));
  recorder_.set_tag("monitor.interval_s", format_double(options_.interval_s));
  return summary_;
}

}  // namespace trainscope::monitor
