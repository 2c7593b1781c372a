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

namespace trainscope::train {

void apply_determinism(const Config& c) {
  // threads: 0 means libtorch's own default, even after an earlier run in
  // this process (a replay, a test) changed it.
  static const int default_threads = at::get_num_threads();
  torch::set_num_threads(c.compute.threads > 0 ? static_cast<int>(c.compute.threads)
                                               : default_threads);
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
