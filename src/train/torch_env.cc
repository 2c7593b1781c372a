#include "trainscope/train/torch_env.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iterator>
#include <regex>

#include "trainscope/core/log.h"
#include "trainscope/env/cpus.h"
#include "trainscope/env/torch.h"

namespace trainscope::train {

namespace {

// Once per process: libtorch refuses a second call, or one after inter-op
// work started.
void set_interop_threads(int n) {
  static bool done = false;
  if (done || static_cast<int>(at::get_num_interop_threads()) == n) return;
  done = true;
  try {
    at::set_num_interop_threads(n);
  } catch (const c10::Error&) {
  }
}

// More threads than CPUs make libtorch's threads wait on each other at
// every parallel region: a step at 64 threads on 2 CPUs took 100x as long
// (docs/benchmarks.md). Allowed (a shared machine may give more CPUs
// later), but said once per process.
void warn_if_oversubscribed(const config::Config& c, int threads) {
  static bool warned = false;
  const int cpus = env::cpu_budget().logical;
  const int blas = c.compute.blas_threads == "auto" ? 0 : std::stoi(c.compute.blas_threads);
  if (warned || cpus <= 0 || (threads <= cpus && blas <= cpus)) return;
  warned = true;
  const bool torch_over = threads > cpus;
  core::log_warn(
      "{} {} is more than the {} CPUs this process may use; steps run many times slower when "
      "threads outnumber CPUs (use {}: auto)",
      torch_over ? "compute.threads" : "compute.blas_threads", torch_over ? threads : blas, cpus,
      torch_over ? "compute.threads" : "compute.blas_threads");
}

// Why compute.device cannot be a GPU here; empty when one is usable.
std::string cuda_here() {
  if (auto why = env::load_torch_cuda(); !why.empty()) return why;
  if (torch::cuda::is_available()) return {};
  return "no CUDA GPU is usable here (none found, or its driver did not start)";
}

// The TF32 switches compute.tf32 stands for, set only where they differ
// from the process's (libtorch warns about its older setters).
void apply_tf32(const std::string& tf32) {
  auto& ctx = at::globalContext();
  const bool cudnn = tf32 != "off", cublas = tf32 == "on";
  if (ctx.allowTF32CuDNN() != cudnn) ctx.setAllowTF32CuDNN(cudnn);
  if (ctx.allowTF32CuBLAS() != cublas) ctx.setAllowTF32CuBLAS(cublas);
}

}  // namespace

torch::Device device_of(const config::Config& c) {
  const std::string& d = c.compute.device;
  if (d == "cpu") {
    // Where a GPU is, torch's CUDA half is mapped for every run: libtorch
    // fixes its CUDA hooks at the first question (at::manual_seed asks),
    // and a worker's CPU run must not fix them before a later GPU run.
    (void)env::load_torch_cuda_where_a_driver_is();
    return torch::kCPU;
  }
  if (auto why = cuda_here(); !why.empty())
    core::fail(core::ErrorKind::kUsage,
               "compute.device is {} but {}; train on the CPU (compute.device: cpu) or on a "
               "machine with an NVIDIA GPU and a torch built with CUDA",
               d, why);
  const auto gpus = static_cast<int64_t>(torch::cuda::device_count());
  if (d == "cuda") return {torch::kCUDA};
  const int64_t n = std::stoll(d.substr(5));
  if (n >= gpus)
    core::fail(core::ErrorKind::kUsage,
               "compute.device is {} but this machine has {} GPU{} (cuda:0{}); name one of them", d,
               gpus, gpus == 1 ? "" : "s", gpus == 1 ? "" : fmt::format(" to cuda:{}", gpus - 1));
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(n)};
}

at::Generator make_generator(const torch::Device& device, uint64_t seed) {
  if (device.is_cpu()) return at::detail::createCPUGenerator(seed);
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::DeviceIndex(-1);
  at::Generator g = at::detail::getCUDAHooks().getNewGenerator(index);
  g.set_current_seed(seed);
  return g;
}

int resolved_threads(const config::Config& c) {
  // libtorch's default, even after an earlier run in this process (a
  // replay, a test) changed it.
  static const int default_threads = at::get_num_threads();
  const std::string& t = c.compute.threads;
  if (t == "auto") return env::cpu_budget().threads();
  if (t == "default" || t == "0") return default_threads;
  return std::stoi(t);
}

void apply_determinism(const config::Config& c) {
  const int threads = resolved_threads(c);
  warn_if_oversubscribed(c, threads);
  torch::set_num_threads(threads);
  set_interop_threads(threads);
  // auto: one thread for a BLAS with a pool of its own (OpenBLAS, BLIS),
  // which would otherwise start as many beside libtorch's; MKL inside the
  // wheels' libtorch runs on libtorch's OpenMP threads and follows them.
  env::set_blas_threads(c.compute.blas_threads == "auto" ? 0 : std::stoi(c.compute.blas_threads));
  auto& ctx = at::globalContext();
  ctx.setDeterministicAlgorithms(c.determinism.deterministic_algorithms, c.determinism.warn_only);
  ctx.setDeterministicFillUninitializedMemory(c.determinism.fill_uninitialized_memory);
  apply_tf32(c.compute.tf32);
  // cuBLAS picks its reduction order by workspace; deterministic algorithms
  // on CUDA need one of its fixed configurations, read when a handle is
  // made. A value the user set is kept.
  if (c.determinism.deterministic_algorithms && c.compute.device != "cpu")
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  ctx.setUserEnabledMkldnn(c.determinism.mkldnn);
  ctx.setBenchmarkCuDNN(c.determinism.cudnn_benchmark);
  ctx.setDeterministicCuDNN(c.determinism.cudnn_deterministic);
#if defined(__GLIBC__)
  // glibc serves big blocks (activations of a few MB) with mmap and returns
  // them, and the top of the heap, to the kernel when freed; the next step
  // allocates them again and pays a zero-filled page fault per 4 KiB. On a
  // ResNet-18 step at batch 64 that was 3.5x the minor faults and stalls of
  // up to 54 ms charged to whichever layer allocated (docs/benchmarks.md).
  // Keeping the memory makes steady-state steps fault-free. It cannot be
  // undone within a process, so `false` only leaves glibc's defaults alone.
  if (c.allocator.keep_memory) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
  }
#endif
}

std::string allocation_failure(const std::string& what) {
  // CUDA's caching allocator: "CUDA out of memory. Tried to allocate 2.00
  // GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.50 GiB is free.
  // ..." (c10/cuda/CUDACachingAllocator.cpp).
  if (what.find("CUDA out of memory") != std::string::npos) {
    static const std::regex gpu(
        "Tried to allocate ([0-9.]+ [KMGTP]?i?B)\\. GPU ([0-9]+) has a total capacity of "
        "([0-9.]+ [KMGTP]?i?B) of which ([0-9.]+ [KMGTP]?i?B) is free");
    std::smatch m;
    if (std::regex_search(what, m, gpu))
      return fmt::format("{} at once on GPU {}, which had {} free of {}", m[1].str(), m[2].str(),
                         m[4].str(), m[3].str());
    return "more memory than the GPU has free";
  }
  if (what.find("can't allocate memory") == std::string::npos) return {};
  const auto at = what.find("allocate ", what.find("tried to"));
  double bytes = at == std::string::npos ? 0 : std::strtod(what.c_str() + at + 9, nullptr);
  if (bytes <= 0) return "more memory than this process may use";
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB"};
  size_t u = 0;
  while (bytes >= 1000 && u + 1 < std::size(units)) bytes /= 1000, ++u;
  return fmt::format("{:.3g} {} at once, more than this process may use", bytes, units[u]);
}

}  // namespace trainscope::train
