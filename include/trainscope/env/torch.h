// The libtorch part of the environment manifest (the env component's
// libtorch half, in libtrainscope_train): libtorch's version and build, the
// BLAS it really calls, its threads and the determinism flags in force.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "trainscope/env/manifest.h"

namespace trainscope::env {

// The BLAS library libtorch calls, found at run time by the API it exports
// (OpenBLAS, BLIS, MKL; "reference" for one without a threads API).
struct BlasLibrary {
  std::string name;     // openblas | blis | mkl | reference
  std::string version;  // as the library reports it ("" when it does not)
  int threads = 1;      // threads it will use for one call
};
// The BLAS loaded in this process (looked up by symbol with dlsym; never
// throws: "reference" when none of the known APIs is there).
BlasLibrary blas_library();
// Sets the BLAS's threads through its own API; false when it has none.
// n = 0: the BLAS's default beside libtorch (MKL inside libtorch: libtorch's
// intra-op threads; a BLAS with a pool of its own: 1).
bool set_blas_threads(int n);

// The CUDA half of the loaded torch (libtorch_cuda.so beside
// libtorch_cpu.so). trainscope links the CPU half only, so that a CPU run
// does not map hundreds of MB of GPU code; a run on a GPU loads the CUDA
// half first. libtorch picks its CUDA hooks once per process, at the first
// question about CUDA: load_torch_cuda must come before it (and nothing
// asks before a run's device is known; torch_cuda_loaded() guards the
// manifest).
//
// Whether the CUDA half is mapped in this process (by load_torch_cuda or
// by `import torch` in Python).
bool torch_cuda_loaded();
// Maps the CUDA half (RTLD_GLOBAL) when it is not; empty on success, else
// why not in a few words (a CPU-only torch, a library of the CUDA half
// that is missing, CUDA hooks chosen before it was loaded).
std::string load_torch_cuda();
// Whether this machine has an NVIDIA driver (its device node
// /dev/nvidiactl), where the CUDA half is worth loading for every run, as
// PyTorch does.
bool nvidia_driver_present();
// load_torch_cuda where an NVIDIA driver is: what every entry point (a
// command, the manifest, a run on the CPU) calls before anything may ask
// libtorch about CUDA. True when the CUDA half is mapped.
bool load_torch_cuda_where_a_driver_is();

// libtorch version and build configuration, the BLAS actually loaded,
// oneDNN, OpenMP/intra-/inter-op threads, determinism flags in force.
Manifest capture_torch();

// The whole manifest of a training run: machine + torch + data file hashes.
// The code's git state joins it through instrument::record_code, which also
// stores a dirty tree's diff.
Manifest capture_run_environment(const std::vector<std::filesystem::path>& data_files);

}  // namespace trainscope::env
