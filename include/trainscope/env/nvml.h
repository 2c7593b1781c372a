// NVML loaded at run time (dlopen), so trainscope builds and runs where no
// NVIDIA driver exists; the monitor's sampler reads GPUs through it. Library:
// $TRAINSCOPE_NVML_LIBRARY, else libnvidia-ml.so.1.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace trainscope::env {

// What a GPU is (gpus()): fields the driver does not give stay empty or 0.
struct GpuStatic {
  std::string name, uuid, serial;
  int cc_major = 0, cc_minor = 0;
  unsigned long long memory_total = 0;           // bytes
  unsigned max_sm_clock = 0, max_mem_clock = 0;  // MHz
  unsigned power_limit_mw = 0;
  unsigned app_sm_clock = 0, app_mem_clock = 0;  // MHz, the application clocks set
  std::string ecc = "unknown", mig = "unknown";  // on, off, or on after a reset (pending)
};

// One reading of a GPU's counters; -1 where the driver does not say.
struct GpuSample {
  double util_percent = -1, mem_util_percent = -1;
  double mem_used_bytes = -1, mem_total_bytes = -1;
  double power_w = -1, temperature_c = -1;
  double sm_clock_mhz = -1, mem_clock_mhz = -1;
  double energy_j = -1;          // the driver's cumulative counter
  double process_mem_bytes = 0;  // used by the given processes
};

// One loaded NVML. NVML's calls are thread-safe, so a const Nvml may be
// read from several threads; construct and destroy it on one.
class Nvml {
 public:
  // Loads and initialises NVML; never throws. available() tells the outcome
  // and reason() why not.
  Nvml();
  // Shuts NVML down (when it was initialised) and unloads the library.
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Whether NVML loaded and initialised; when not, reason() says why.
  bool available() const { return ok_; }
  const std::string& reason() const { return reason_; }
  // The driver's version, "unknown" when unavailable.
  std::string driver_version() const;
  std::string cuda_driver_version() const;  // "12.2"
  // Every GPU the driver lists, in its order; empty when unavailable.
  std::vector<GpuStatic> gpus() const;
  // Current counters of every GPU; process_mem_bytes sums the memory of the
  // compute processes whose PID is in `pids`.
  std::vector<GpuSample> sample(const std::vector<int64_t>& pids) const;

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string reason_;
};

}  // namespace trainscope::env
