// The libtorch part of the environment manifest, and the determinism
// settings applied before training.
#pragma once

#include <torch/types.h>

#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/train/config.h"

namespace trainscope::train {

// Applies the compute block (threads for libtorch and its BLAS), the
// determinism block and the allocator setting to this process. Warns once
// per process on stderr when compute.threads or compute.blas_threads is
// more than the CPUs this process may use.
void apply_determinism(const Config& c);

// The intra-op thread count compute.threads stands for here: "auto" is
// env::cpu_budget().threads(), "default" libtorch's own choice.
int resolved_threads(const Config& c);
// The batches to prepare ahead that data.prefetch stands for with
// `threads` compute threads: "auto" is 2 when a core is left over, else 0.
int64_t resolved_prefetch(const Config& c, int threads);

// The BLAS library libtorch calls, found at run time by the API it exports
// (OpenBLAS, BLIS, MKL; "reference" for one without a threads API).
struct BlasLibrary {
  std::string name;     // openblas | blis | mkl | reference
  std::string version;  // as the library reports it ("" when it does not)
  int threads = 1;      // threads it will use for one call
};
BlasLibrary blas_library();
// Sets the BLAS's threads through its own API; false when it has none.
bool set_blas_threads(int n);

// libtorch version and build configuration, the BLAS actually loaded,
// oneDNN, OpenMP/intra-/inter-op threads, determinism flags in force.
env::Manifest capture_torch();

// The whole manifest of a training run: machine + torch + data file hashes
// + git of the config's repository.
env::Manifest capture_run_environment(const std::vector<std::filesystem::path>& data_files,
                                      const std::filesystem::path& config_path);

// xxHash3-64 of a tensor's raw bytes (made contiguous first).
uint64_t tensor_hash(const torch::Tensor& t);

}  // namespace trainscope::train
