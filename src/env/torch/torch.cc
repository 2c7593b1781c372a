// The libtorch part of the environment manifest: libtorch's build, the
// BLAS it calls, its threads and determinism flags.
#include "trainscope/env/torch.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "trainscope/env/packages.h"

namespace trainscope::env {

namespace {

template <typename F>
F blas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

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

Manifest capture_torch() {
  Manifest m;
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
  // Now that libtorch and the BLAS are mapped: the Debian packages they, and
  // everything else the process mapped, come from (`env recreate` pins them).
  m.merge(capture_loaded_packages());
  return m;
}

Manifest capture_run_environment(const std::vector<std::filesystem::path>& data_files) {
  Manifest m = capture_machine();
  m.merge(capture_torch());
  m.merge(hash_files(data_files));
  return m;
}

}  // namespace trainscope::env
