// ResourceSampler: a thread that samples a process tree, the system and the
// GPUs at a fixed interval and records the samples as metrics of a run.
//
// Scope is explicit in every key: "proc/..." is the sampled process and all
// its descendants, "sys/..." the whole machine, "gpu<i>/..." one device.
// Rates (disk, network) are per second over the last interval. The sample
// index is the metric step; wall time is the metric time.
//
//   proc/cpu_percent           CPU of the process tree, 100 = one core busy
//   proc/cpu_user_percent, proc/cpu_sys_percent
//   proc/cpu_machine_percent   the same, 100 = every core busy
//   proc/rss_mib, proc/peak_rss_mib, proc/threads
//   proc/disk_read_mibps, proc/disk_write_mibps
//   sys/cpu_percent, sys/cpu<i>_percent (per core), sys/mem_used_mib
//   sys/net_rx_mibps, sys/net_tx_mibps
//   gpu<i>/util_percent, mem_used_mib, power_w, temp_c, sm_clock_mhz,
//          mem_clock_mhz, proc_mem_mib
//   energy/cpu_j, energy/dram_j, energy/gpu_j   cumulative joules
//
// At stop() the totals are recorded as energy/total_kwh, energy/co2_kg and
// tags say where each figure came from ("rapl", "nvml", or "estimated: ...").
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trainscope/store/run_recorder.h"

namespace trainscope::monitor {

// How a ResourceSampler samples, and what it assumes for the energy
// estimates when no counter exists.
struct SamplerOptions {
  double interval_s = 1.0;
  int64_t pid = 0;                   // 0: this process
  double carbon_kg_per_kwh = 0.385;  // grid carbon intensity
  double cpu_tdp_watts = 0;          // 0: 10 W per physical core, flagged estimated
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path powercap_root = "/sys/class/powercap";
};

// The energy of a sampled interval, by source; what stop() returns.
struct EnergySummary {
  double cpu_j = 0, dram_j = 0, gpu_j = 0;
  std::string cpu_source, gpu_source;  // "rapl", "nvml", "estimated (...)", "none"
  // CPU, DRAM and GPU joules together, in kWh.
  double kwh() const { return (cpu_j + dram_j + gpu_j) / 3.6e6; }
};

// Samples on its own thread into `recorder` (held by reference: it must
// outlive the sampler, or at least stop()). The owning thread constructs,
// stops and destroys it; samples() may be read from any thread;
// sample_once() must not race the sampler's own thread (benchmarks call
// it on a sampler with a long interval).
class ResourceSampler {
 public:
  // Starts sampling at once (the first sample is taken immediately).
  ResourceSampler(store::RunRecorder& recorder, SamplerOptions options = {});
  // Stops and records the energy totals if stop() was not called.
  ~ResourceSampler();
  ResourceSampler(const ResourceSampler&) = delete;
  ResourceSampler& operator=(const ResourceSampler&) = delete;

  // Takes a last sample, stops the thread, records totals. Idempotent.
  EnergySummary stop();
  // Samples taken so far (the next sample's step); any thread.
  int64_t samples() const { return samples_.load(); }

  // One sample, for benchmarks; normally called by the thread.
  void sample_once();

 private:
  struct State;
  void loop();

  store::RunRecorder& recorder_;
  SamplerOptions options_;
  std::unique_ptr<State> state_;
  std::atomic<int64_t> samples_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
  EnergySummary summary_;
  std::thread thread_;
};

}  // namespace trainscope::monitor
