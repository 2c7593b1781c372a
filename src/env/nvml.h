// NVML loaded at run time (dlopen), so trainscope builds and runs where no
// NVIDIA driver exists. Private to the env component (the monitor will use it
// too). Library: $TRAINSCOPE_NVML_LIBRARY, else libnvidia-ml.so.1.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace trainscope::env {

struct GpuStatic {
  std::string name, uuid, serial;
  int cc_major = 0, cc_minor = 0;
  unsigned long long memory_total = 0;  // bytes
  unsigned max_sm_clock = 0, max_mem_clock = 0;  // MHz
  unsigned power_limit_mw = 0;
};

class Nvml {
 public:
  // Loads and initialises NVML; never throws. available() tells the outcome
  // and reason() why not.
  Nvml();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const { return ok_; }
  const std::string& reason() const { return reason_; }
  std::string driver_version() const;
  std::string cuda_driver_version() const;  // "12.2"
  std::vector<GpuStatic> gpus() const;

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string reason_;
};

}  // namespace trainscope::env
