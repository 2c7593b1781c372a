#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "fmt/format.h"
#include "trainscope/env/manifest.h"
#include "trainscope/env/nvml.h"

namespace trainscope::env {

// The subset of the NVML C API we call, with its ABI types.
struct Nvml::Api {
  using Device = void*;
  struct Memory {
    unsigned long long total, free, used;
  };
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Device*) = nullptr;
  int (*name)(Device, char*, unsigned) = nullptr;
  int (*uuid)(Device, char*, unsigned) = nullptr;
  int (*serial)(Device, char*, unsigned) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
  int (*cuda_driver)(int*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*cc)(Device, int*, int*) = nullptr;
  int (*max_clock)(Device, int, unsigned*) = nullptr;
  int (*power_limit)(Device, unsigned*) = nullptr;
  int (*app_clock)(Device, int, unsigned*) = nullptr;
  int (*ecc)(Device, int*, int*) = nullptr;            // current, pending: 0 off, 1 on
  int (*mig)(Device, unsigned*, unsigned*) = nullptr;  // current, pending: 0 off, 1 on
  struct Utilization {
    unsigned gpu, memory;
  };
  struct ProcessInfo {
    unsigned pid;
    unsigned long long used_memory;
    unsigned gpu_instance, compute_instance;
  };
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*power)(Device, unsigned*) = nullptr;
  int (*temperature)(Device, int, unsigned*) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*energy)(Device, unsigned long long*) = nullptr;
  int (*processes)(Device, unsigned*, ProcessInfo*) = nullptr;
};

namespace {
template <typename F>
bool load(void* h, const char* sym, F& out) {
  out = reinterpret_cast<F>(dlsym(h, sym));
  return out != nullptr;
}
constexpr int kClockSm = 1, kClockMem = 2;
}  // namespace

Nvml::Nvml() : api_(std::make_unique<Api>()) {
  const char* override_path = std::getenv("TRAINSCOPE_NVML_LIBRARY");
  std::string lib = override_path && *override_path ? override_path : "libnvidia-ml.so.1";
  handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    reason_ = "NVML not found (" + lib + "): no NVIDIA driver on this machine";
    return;
  }
  Api& a = *api_;
  bool all = load(handle_, "nvmlInit_v2", a.init) && load(handle_, "nvmlShutdown", a.shutdown) &&
             load(handle_, "nvmlErrorString", a.error_string) &&
             load(handle_, "nvmlDeviceGetCount_v2", a.count) &&
             load(handle_, "nvmlDeviceGetHandleByIndex_v2", a.handle) &&
             load(handle_, "nvmlDeviceGetName", a.name) &&
             load(handle_, "nvmlDeviceGetUUID", a.uuid) &&
             load(handle_, "nvmlSystemGetDriverVersion", a.driver) &&
             load(handle_, "nvmlDeviceGetMemoryInfo", a.memory);
  // Optional: older drivers lack some of these.
  load(handle_, "nvmlDeviceGetSerial", a.serial);
  load(handle_, "nvmlSystemGetCudaDriverVersion", a.cuda_driver);
  load(handle_, "nvmlDeviceGetCudaComputeCapability", a.cc);
  load(handle_, "nvmlDeviceGetMaxClockInfo", a.max_clock);
  load(handle_, "nvmlDeviceGetPowerManagementLimit", a.power_limit);
  load(handle_, "nvmlDeviceGetApplicationsClock", a.app_clock);
  load(handle_, "nvmlDeviceGetEccMode", a.ecc);
  load(handle_, "nvmlDeviceGetMigMode", a.mig);
  load(handle_, "nvmlDeviceGetUtilizationRates", a.utilization);
  load(handle_, "nvmlDeviceGetPowerUsage", a.power);
  load(handle_, "nvmlDeviceGetTemperature", a.temperature);
  load(handle_, "nvmlDeviceGetClockInfo", a.clock);
  load(handle_, "nvmlDeviceGetTotalEnergyConsumption", a.energy);
  if (!load(handle_, "nvmlDeviceGetComputeRunningProcesses_v3", a.processes))
    load(handle_, "nvmlDeviceGetComputeRunningProcesses_v2", a.processes);
  if (!all) {
    reason_ = lib + " lacks required NVML functions";
    return;
  }
  int rc = a.init();
  if (rc != 0) {
    reason_ = std::string("nvmlInit failed: ") + a.error_string(rc);
    return;
  }
  ok_ = true;
}

Nvml::~Nvml() {
  if (ok_) api_->shutdown();
  if (handle_) dlclose(handle_);
}

std::string Nvml::driver_version() const {
  char buf[96] = {0};
  return ok_ && api_->driver(buf, sizeof buf) == 0 ? buf : "unknown";
}

std::string Nvml::cuda_driver_version() const {
  int v = 0;
  if (!ok_ || !api_->cuda_driver || api_->cuda_driver(&v) != 0) return "unknown";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::vector<GpuStatic> Nvml::gpus() const {
  std::vector<GpuStatic> out;
  unsigned n = 0;
  if (!ok_ || api_->count(&n) != 0) return out;
  for (unsigned i = 0; i < n; ++i) {
    Api::Device d = nullptr;
    if (api_->handle(i, &d) != 0) continue;
    GpuStatic g;
    char buf[128] = {0};
    if (api_->name(d, buf, sizeof buf) == 0) g.name = buf;
    buf[0] = 0;
    if (api_->uuid(d, buf, sizeof buf) == 0) g.uuid = buf;
    buf[0] = 0;
    g.serial = api_->serial && api_->serial(d, buf, sizeof buf) == 0 ? buf : "unknown";
    Api::Memory mem{};
    if (api_->memory(d, &mem) == 0) g.memory_total = mem.total;
    if (api_->cc) api_->cc(d, &g.cc_major, &g.cc_minor);
    if (api_->max_clock) {
      api_->max_clock(d, kClockSm, &g.max_sm_clock);
      api_->max_clock(d, kClockMem, &g.max_mem_clock);
    }
    if (api_->power_limit) api_->power_limit(d, &g.power_limit_mw);
    if (api_->app_clock) {
      api_->app_clock(d, kClockSm, &g.app_sm_clock);
      api_->app_clock(d, kClockMem, &g.app_mem_clock);
    }
    // A mode the driver reports (an unsupported one answers with an error).
    const auto mode = [](int current, int pending) {
      std::string m = current ? "on" : "off";
      return current == pending ? m
                                : m + fmt::format(" ({} after a reset)", pending ? "on" : "off");
    };
    if (int cur = 0, pend = 0; api_->ecc && api_->ecc(d, &cur, &pend) == 0) g.ecc = mode(cur, pend);
    if (unsigned cur = 0, pend = 0; api_->mig && api_->mig(d, &cur, &pend) == 0)
      g.mig = mode(static_cast<int>(cur), static_cast<int>(pend));
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<GpuSample> Nvml::sample(const std::vector<int64_t>& pids) const {
  std::vector<GpuSample> out;
  unsigned n = 0;
  if (!ok_ || api_->count(&n) != 0) return out;
  for (unsigned i = 0; i < n; ++i) {
    Api::Device d = nullptr;
    GpuSample s;
    if (api_->handle(i, &d) != 0) {
      out.push_back(s);
      continue;
    }
    Api::Utilization u{};
    if (api_->utilization && api_->utilization(d, &u) == 0)
      s.util_percent = u.gpu, s.mem_util_percent = u.memory;
    Api::Memory m{};
    if (api_->memory(d, &m) == 0)
      s.mem_used_bytes = static_cast<double>(m.used),
      s.mem_total_bytes = static_cast<double>(m.total);
    unsigned v = 0;
    if (api_->power && api_->power(d, &v) == 0) s.power_w = v / 1000.0;
    if (api_->temperature && api_->temperature(d, 0, &v) == 0) s.temperature_c = v;
    if (api_->clock && api_->clock(d, kClockSm, &v) == 0) s.sm_clock_mhz = v;
    if (api_->clock && api_->clock(d, kClockMem, &v) == 0) s.mem_clock_mhz = v;
    unsigned long long mj = 0;
    if (api_->energy && api_->energy(d, &mj) == 0) s.energy_j = static_cast<double>(mj) / 1000.0;
    if (api_->processes) {
      Api::ProcessInfo infos[64];
      unsigned count = 64;
      if (api_->processes(d, &count, infos) == 0)
        for (unsigned k = 0; k < count && k < 64; ++k)
          if (std::find(pids.begin(), pids.end(), static_cast<int64_t>(infos[k].pid)) != pids.end())
            s.process_mem_bytes += static_cast<double>(infos[k].used_memory);
    }
    out.push_back(s);
  }
  return out;
}

Manifest capture_gpus() {
  Manifest m;
  Nvml nvml;
  if (!nvml.available()) {
    m["driver.gpu"] = "none (" + nvml.reason() + ")";
  } else {
    auto gpus = nvml.gpus();
    m["driver.gpu"] = std::to_string(gpus.size()) + " NVIDIA GPU(s)";
    m["driver.nvidia.version"] = nvml.driver_version();
    m["driver.cuda.driver_version"] = nvml.cuda_driver_version();
    for (size_t i = 0; i < gpus.size(); ++i) {
      const auto& g = gpus[i];
      std::string p = "hardware.gpu" + std::to_string(i) + ".";
      m[p + "name"] = g.name;
      m[p + "uuid"] = g.uuid;
      m[p + "serial"] = g.serial;
      m[p + "memory_total"] =
          fmt::format("{:.1f} GiB", static_cast<double>(g.memory_total) / (1ull << 30));
      m[p + "compute_capability"] = fmt::format("{}.{}", g.cc_major, g.cc_minor);
      m[p + "max_sm_clock"] = std::to_string(g.max_sm_clock) + " MHz";
      m[p + "max_mem_clock"] = std::to_string(g.max_mem_clock) + " MHz";
      m[p + "power_limit"] = fmt::format("{:.0f} W", g.power_limit_mw / 1000.0);
      m[p + "application_clocks"] =
          fmt::format("SM {} MHz, memory {} MHz", g.app_sm_clock, g.app_mem_clock);
      m[p + "ecc"] = g.ecc;
      m[p + "mig"] = g.mig;
    }
  }
  // CUDA runtime and cuDNN, when their libraries load.
  for (const char* lib :
       {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}) {
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) {
      using Fn = int (*)(int*);
      if (auto f = reinterpret_cast<Fn>(dlsym(h, "cudaRuntimeGetVersion"))) {
        int v = 0;
        if (f(&v) == 0)
          m["libraries.cuda.runtime"] = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
      }
      dlclose(h);
      break;
    }
  }
  for (const char* lib : {"libcudnn.so", "libcudnn.so.8", "libcudnn.so.9"}) {
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) {
      using Fn = size_t (*)();
      if (auto f = reinterpret_cast<Fn>(dlsym(h, "cudnnGetVersion")))
        m["libraries.cudnn"] = std::to_string(f());
      dlclose(h);
      break;
    }
  }
  if (!m.count("libraries.cuda.runtime")) m["libraries.cuda.runtime"] = "not loaded";
  return m;
}

}  // namespace trainscope::env
