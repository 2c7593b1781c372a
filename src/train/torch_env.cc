#include "trainscope/train/torch_env.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <torch/torch.h>
#include <torch/version.h>
#include <xxhash.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "trainscope/core/log.h"
#include "trainscope/env/cpus.h"

namespace trainscope::train {

namespace {

template <typename F>
F blas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// Once per process: libtorch refuses a second call, or one after inter-op
// work started.
void set_interop_threads(int n) {
  static bool done = false;
  if (done || at::get_num_interop_threads() == n) return;
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
void warn_if_oversubscribed(const Config& c, int threads) {
  static bool warned = false;
  const int cpus = env::cpu_budget().logical;
  const int blas = c.compute.blas_threads == "auto" ? 1 : std::stoi(c.compute.blas_threads);
  if (warned || cpus <= 0 || (threads <= cpus && blas <= cpus)) return;
  warned = true;
  const bool torch_over = threads > cpus;
  core::log_warn(
      "{} {} is more than the {} CPUs this process may use; steps run many times slower when "
      "threads outnumber CPUs (use {}: auto)",
      torch_over ? "compute.threads" : "compute.blas_threads", torch_over ? threads : blas, cpus,
      torch_over ? "compute.threads" : "compute.blas_threads");
}

}  // namespace

int resolved_threads(const Config& c) {
  // libtorch's default, even after an earlier run in this process (a
  // replay, a test) changed it.
  static const int default_threads = at::get_num_threads();
  const std::string& t = c.compute.threads;
  if (t == "auto") return env::cpu_budget().threads();
  if (t == "default" || t == "0") return default_threads;
  return std::stoi(t);
}

int64_t resolved_prefetch(const Config& c, int threads) {
  if (c.data.prefetch != "auto") return std::stoll(c.data.prefetch);
  return threads < env::cpu_budget().threads() ? 2 : 0;
}

BlasLibrary blas_library() {
  BlasLibrary b;
  using GetInt = int (*)();
  using GetStr = char* (*)();
  if (auto config = blas_symbol<GetStr>("openblas_get_config")) {
    b.name = "openblas";
    std::istringstream words(config());  // "OpenBLAS 0.3.21 NO_LAPACKE ..."
    words >> b.version >> b.version;
    if (auto get = blas_symbol<GetInt>("openblas_get_num_threads")) b.threads = get();
  } else if (auto get = blas_symbol<GetInt>("bli_thread_get_num_threads")) {
    b.name = "blis";
    b.threads = get();
    if (auto v = blas_symbol<GetStr>("bli_info_get_version_str")) b.version = v();
  } else if (auto mkl = blas_symbol<GetInt>("mkl_get_max_threads")) {
    b.name = "mkl";
    b.threads = mkl();
  } else {
    b.name = "reference";  // netlib's BLAS: single-threaded, no threads API
  }
  return b;
}

bool set_blas_threads(int n) {
  using SetInt = void (*)(int);
  for (const char* name :
       {"openblas_set_num_threads", "bli_thread_set_num_threads", "mkl_set_num_threads"}) {
    if (auto set = blas_symbol<SetInt>(name)) {
      set(n);
      return true;
    }
  }
  return false;
}

void apply_determinism(const Config& c) {
  const int threads = resolved_threads(c);
  warn_if_oversubscribed(c, threads);
  torch::set_num_threads(threads);
  set_interop_threads(threads);
  set_blas_threads(c.compute.blas_threads == "auto" ? 1 : std::stoi(c.compute.blas_threads));
  auto& ctx = at::globalContext();
  ctx.setDeterministicAlgorithms(c.determinism.deterministic_algorithms, /*warn_only=*/false);
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

env::Manifest capture_torch() {
  env::Manifest m;
  m["libraries.torch.version"] = TORCH_VERSION;
  std::string cfg = at::show_config();
  std::string one_line = std::regex_replace(cfg, std::regex("\\s*\\n\\s*"), " | ");
  m["libraries.torch.build_config"] = one_line;
  std::smatch match;
  if (std::regex_search(cfg, match, std::regex("BLAS_INFO=([^,\\s]+)")))
    m["libraries.torch.blas_info"] = match[1];
  if (std::regex_search(cfg, match, std::regex("MKL-DNN v([0-9.]+)")))
    m["libraries.onednn"] = match[1];
  m["libraries.torch.has_mkldnn"] = at::hasMKLDNN() ? "true" : "false";
  m["libraries.torch.has_cuda"] = torch::cuda::is_available() ? "true" : "false";
  // The BLAS libtorch really calls: whichever libblas/openblas is mapped
  // once a matmul has run.
  {
    torch::NoGradGuard ng;
    (void)torch::ones({4, 4}).mm(torch::ones({4, 4}));
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::set<std::string> blas;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find("blas") != std::string::npos || path.find("mkl_") != std::string::npos ||
        path.find("blis") != std::string::npos)
      blas.insert(path);
  }
  std::string loaded;
  for (const auto& p : blas) loaded += (loaded.empty() ? "" : " ") + p;
  m["libraries.blas.loaded"] = loaded.empty() ? "none mapped" : loaded;
  using GetThreads = int (*)();
  if (auto f = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")))
    m["threads.openblas"] = std::to_string(f());
  using GetConfig = char* (*)();
  if (auto f = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
    m["libraries.blas.openblas_config"] = f();
  const BlasLibrary library = blas_library();
  m["libraries.blas.name"] = library.name;
  m["libraries.blas.version"] = library.version.empty() ? "unknown" : library.version;
  m["threads.blas"] = std::to_string(library.threads);
  m["threads.torch.intra_op"] = std::to_string(at::get_num_threads());
  m["threads.torch.inter_op"] = std::to_string(at::get_num_interop_threads());
  m["threads.parallel_info"] =
      std::regex_replace(at::get_parallel_info(), std::regex("\\s*\\n\\s*"), " | ");
  auto& ctx = at::globalContext();
  m["flags.deterministic_algorithms"] = ctx.deterministicAlgorithms() ? "true" : "false";
  m["flags.mkldnn"] = ctx.userEnabledMkldnn() ? "on" : "off";
  m["flags.cudnn_benchmark"] = ctx.benchmarkCuDNN() ? "true" : "false";
  m["flags.cudnn_deterministic"] = ctx.deterministicCuDNN() ? "true" : "false";
  return m;
}

env::Manifest capture_run_environment(const std::vector<std::filesystem::path>& data_files,
                                      const std::filesystem::path& config_path) {
  env::Manifest m = env::capture_machine();
  m.merge(capture_torch());
  m.merge(env::hash_files(data_files));
  if (!config_path.empty()) m.merge(env::capture_git(config_path));
  return m;
}

uint64_t tensor_hash(const torch::Tensor& t) {
  auto c = t.contiguous();
  return XXH3_64bits(c.data_ptr(), c.numel() * c.element_size());
}

}  // namespace trainscope::train
