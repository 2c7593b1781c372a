// The libtorch part of the environment manifest, and the determinism
// settings applied before training.
#pragma once

#include <torch/types.h>

#include <vector>

#include "trainscope/env/manifest.h"
#include "trainscope/train/config.h"

namespace trainscope::train {

// Applies threads and the determinism block to this process's libtorch.
void apply_determinism(const Config& c);

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
