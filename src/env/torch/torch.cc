// The libtorch part of the environment manifest: libtorch's build, the
// BLAS it calls, its threads and determinism flags.
#include "trainscope/env/torch.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "trainscope/env/packages.h"
#include "trainscope/env/torch_package.h"

namespace trainscope::env {

namespace {

template <typename F>
F blas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// The package folder (site-packages/torch) of the libtorch this process
// mapped: where its libtorch_cpu.so lies, one folder up.
std::filesystem::path torch_package_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::show_config), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  const auto lib = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path() : lib.parent_path().parent_path();
}

// libtorch_cuda.so beside the mapped libtorch_cpu.so.
std::filesystem::path torch_cuda_library() {
  const auto dir = torch_package_dir();
  return dir.empty() ? std::filesystem::path() : dir / "lib" / "libtorch_cuda.so";
}

// OpenMP as libtorch reports it ("OpenMP 201511 (a.k.a. OpenMP 4.5)"), the
// runtime mapped (the wheel's own libgomp), and MKL's version when libtorch
// holds it statically (nothing of it mapped).
void add_runtime_libraries(const std::string& cfg, const std::string& maps, Manifest& m) {
  std::smatch match;
  const std::string parallel = at::get_parallel_info();
  if (std::regex_search(parallel, match,
                        std::regex("OpenMP [0-9]+ \\(a\\.k\\.a\\. OpenMP [0-9.]+\\)")))
    m["libraries.openmp"] = match[0];
  if (std::regex_search(maps, match, std::regex("(/\\S*lib(gomp|iomp5|omp)[^/\\s]*\\.so[^/\\s]*)")))
    m["libraries.openmp.loaded"] = match[1];
  if (std::regex_search(cfg, match, std::regex("Math Kernel Library Version ([^ ]+)")))
    m["libraries.mkl"] = match[1];
}

// A function of a library this process has mapped (by the file in `maps`
// whose name starts with `stem`), without loading anything new.
template <typename Fn>
Fn mapped_symbol(const std::string& maps, const std::string& stem, const char* name) {
  std::smatch match;
  if (!std::regex_search(maps, match, std::regex("(/\\S*/" + stem + "\\.so[^/\\s]*)")))
    return nullptr;
  void* h = dlopen(match[1].str().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return nullptr;
  auto f = reinterpret_cast<Fn>(dlsym(h, name));
  dlclose(h);  // still mapped: RTLD_NOLOAD took one more reference
  return f;
}

// "9.19.0" from cuDNN's or NCCL's one-number versions.
std::string dotted(long v, long major_unit, long minor_unit) {
  return fmt::format("{}.{}.{}", v / major_unit, (v % major_unit) / minor_unit, v % minor_unit);
}

// What the CUDA build of the loaded torch was built with and loaded: CUDA
// runtime, cuDNN, cuBLAS and NCCL. A CPU-only torch records none.
void add_cuda_libraries(const std::string& maps, Manifest& m) {
  // Asking the hooks before the CUDA half is loaded would fix them for
  // the process (a later run on a GPU could not load it).
  if (!torch_cuda_loaded()) {
    m["libraries.cuda.built_with"] = "not loaded (a run on the CPU)";
    return;
  }
  const auto& hooks = at::detail::getCUDAHooks();
  long cudart = 0;
  try {
    cudart = hooks.versionCUDART();
  } catch (const c10::Error&) {
    m["libraries.cuda.built_with"] = "none (a CPU-only torch)";
    return;
  }
  m["libraries.cuda.built_with"] = fmt::format("{}.{}", cudart / 1000, (cudart % 1000) / 10);
  try {
    m["libraries.cudnn.built_with"] = dotted(hooks.versionCuDNN(), 10000, 100);
    m["libraries.cudnn.loaded"] = dotted(hooks.versionRuntimeCuDNN(), 10000, 100);
  } catch (const c10::Error&) {
  }
  using CublasProperty = int (*)(int, int*);  // cublasGetProperty(MAJOR=0, MINOR=1, PATCH=2)
  if (auto f = mapped_symbol<CublasProperty>(maps, "libcublas", "cublasGetProperty")) {
    int v[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) f(i, &v[i]);
    m["libraries.cublas.loaded"] = fmt::format("{}.{}.{}", v[0], v[1], v[2]);
  }
  using NcclVersion = int (*)(int*);
  if (auto f = mapped_symbol<NcclVersion>(maps, "libnccl", "ncclGetVersion")) {
    int v = 0;
    if (f(&v) == 0) m["libraries.nccl.loaded"] = dotted(v, 10000, 100);
  }
}

}  // namespace

bool torch_cuda_loaded() {
  const auto lib = torch_cuda_library();
  if (lib.empty()) return false;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

bool nvidia_driver_present() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec);
}

std::string load_torch_cuda() {
  const auto lib = torch_cuda_library();
  std::error_code ec;
  if (lib.empty() || !std::filesystem::exists(lib, ec))
    return fmt::format("torch {} was built without CUDA (no libtorch_cuda.so in {})", TORCH_VERSION,
                       lib.parent_path().string());
  if (!torch_cuda_loaded() && !dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    return fmt::format("torch's CUDA half ({}) does not load: {}", lib.string(),
                       why ? why : "unknown");
  }
  try {
    (void)at::detail::getCUDAHooks().versionCUDART();
  } catch (const c10::Error&) {
    return "torch's CUDA half was loaded after this process had asked about CUDA without it";
  }
  return {};
}

bool load_torch_cuda_where_a_driver_is() {
  return nvidia_driver_present() && load_torch_cuda().empty();
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
    using GetVersion = void (*)(char*, int);
    if (auto v = blas_symbol<GetVersion>("MKL_Get_Version_String")) {
      char text[256] = {};
      v(text, sizeof text - 1);  // "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product ..."
      std::cmatch m;
      if (std::regex_search(text, m, std::regex("Version ([0-9][^ ]*)"))) b.version = m[1];
    }
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
      set(std::max(n, 1));
      return true;
    }
  }
  // The wheels' MKL, linked into libtorch_cpu, exports only the calling
  // thread's setting (0: back to libtorch's, which torch::set_num_threads
  // sets), by its C name (the lower-case one is Fortran's, by pointer).
  using SetLocal = int (*)(int);
  if (auto set = blas_symbol<SetLocal>("MKL_Set_Num_Threads_Local")) {
    set(n);
    return true;
  }
  return false;
}

Manifest capture_torch() {
  // at::show_config asks about CUDA: where a GPU is, the CUDA half comes
  // first (see load_torch_cuda), as it does for a run.
  (void)load_torch_cuda_where_a_driver_is();
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
  m["libraries.torch.has_cuda"] =
      torch_cuda_loaded() && torch::cuda::is_available() ? "true" : "false";
  // The BLAS libtorch really calls: whichever libblas/openblas is mapped
  // once a matmul has run.
  {
    torch::NoGradGuard ng;
    (void)torch::ones({4, 4}).mm(torch::ones({4, 4}));
  }
  std::ifstream maps_file("/proc/self/maps");
  std::string maps((std::istreambuf_iterator<char>(maps_file)), std::istreambuf_iterator<char>());
  std::istringstream lines(maps);
  std::string line;
  std::set<std::string> blas;
  while (std::getline(lines, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find("blas") != std::string::npos || path.find("mkl_") != std::string::npos ||
        path.find("blis") != std::string::npos)
      blas.insert(path);
  }
  std::string loaded;
  for (const auto& p : blas) loaded += (loaded.empty() ? "" : " ") + p;
  m["libraries.blas.loaded"] = !loaded.empty() ? loaded
                               : cfg.find("BLAS_INFO=mkl") != std::string::npos
                                   ? "static in libtorch_cpu (MKL)"
                                   : "none mapped";
  add_runtime_libraries(cfg, maps, m);
  add_cuda_libraries(maps, m);
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
  m["flags.deterministic_warn_only"] = ctx.deterministicAlgorithmsWarnOnly() ? "true" : "false";
  m["flags.fill_uninitialized_memory"] =
      ctx.deterministicFillUninitializedMemory() ? "true" : "false";
  m["flags.tf32_cudnn"] = ctx.allowTF32CuDNN() ? "true" : "false";
  m["flags.tf32_cublas"] = ctx.allowTF32CuBLAS() ? "true" : "false";
  const char* workspace = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  m["flags.cublas_workspace_config"] = workspace ? workspace : "unset";
  // Where libtorch came from (a wheel's version and index, conda, a source
  // build): over the compiled-in version, which lacks the local label.
  for (auto& [k, v] : describe_torch_package(torch_package_dir())) m[k] = v;
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
