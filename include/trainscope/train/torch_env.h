// The compute, determinism and allocator settings applied to this process
// before training (the libtorch part of the manifest is env/torch.h).
#pragma once

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <vector>

#include "trainscope/config/config.h"
#include "trainscope/env/torch.h"

namespace trainscope::train {

// Applies the compute block (threads for libtorch and its BLAS), the
// determinism block and the allocator setting to this process. Warns once
// per process on stderr when compute.threads or compute.blas_threads is
// more than the CPUs this process may use.
void apply_determinism(const config::Config& c);

// The device compute.device names, checked against this process: `cuda`
// with a torch built without CUDA, or on a machine where no GPU is usable,
// and `cuda:N` past the GPUs there throw core::Error(kUsage) naming the
// key, what this machine has and what to do. `cuda` is the current GPU
// (cuda:0 unless CUDA_VISIBLE_DEVICES or the process chose another).
torch::Device device_of(const config::Config& c);

// A new random generator on `device` (a CPU one for the CPU; the GPU's
// Philox generator for CUDA), seeded with `seed`.
at::Generator make_generator(const torch::Device& device, uint64_t seed);

// The intra-op thread count compute.threads stands for here: "auto" is
// env::cpu_budget().threads(), "default" libtorch's own choice.
int resolved_threads(const config::Config& c);

// For libtorch's message of an allocation that failed ("DefaultCPUAllocator:
// can't allocate memory: you tried to allocate 210453397504 bytes"): "210 GB
// at once, more than this process may use"; for CUDA's ("CUDA out of
// memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19
// GiB of which 1.50 GiB is free. ..."): "2.00 GiB at once on GPU 0, which
// had 1.50 GiB free of 79.19 GiB"; empty for any other message.
std::string allocation_failure(const std::string& libtorch_message);

}  // namespace trainscope::train
