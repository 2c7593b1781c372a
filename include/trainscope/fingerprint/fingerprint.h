// Fingerprints: the hash of every parameter, buffer and the loss after an
// optimizer step, so that `trainscope diff` names the first step and tensor
// where two runs part and `rerun --verify` proves a rerun bit-identical.
// The unit (registered by this component) records them every
// fingerprint.every_steps steps (fingerprint/config.h) from any event
// source.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainscope/fingerprint/records.h"  // kHostHash, kDeviceHash
#include "trainscope/instrument/events.h"

namespace trainscope::fingerprint {

// The tensors a fingerprint hashes, in forward order: for each module in
// registration order, its own parameters then its buffers.
std::vector<std::pair<std::string, torch::Tensor>> tensors(torch::nn::Module& model);

// xxHash3-64 of a tensor's raw bytes (made contiguous first; a GPU's
// tensor is copied to the CPU for it).
uint64_t tensor_hash(const torch::Tensor& t);

// The hash for tensors on a GPU, computed where they live: each tensor's
// bytes (made contiguous) as little-endian 32-bit words w_0..w_{n-1}, the
// last one zero-padded, and
//   hash = bytes * 0x9e3779b97f4a7c15 + sum_i splitmix64(w_i + (i << 32))
// modulo 2^64. A sum of terms reduces in any order to the same value, so
// the GPU reduces every tensor in a few kernels and sends back 8 bytes per
// tensor, and a CPU computes the same hash for the same bytes (device_hash
// on CPU tensors, or device_hash_of_bytes).
class DeviceHasher {
 public:
  // The hashes of `ts`, in order, all on one device (CPU or GPU). The
  // layout (each tensor's size) is kept between calls: a fingerprint
  // hashes the same tensors every time.
  std::vector<uint64_t> operator()(const std::vector<torch::Tensor>& ts);

 private:
  std::vector<int64_t> bytes_;  // each tensor's bytes, the layout of the kept indices
  torch::Device device_ = torch::kCPU;
  torch::Tensor position_;  // int64 per word: its index within its tensor, shifted left by 32
  torch::Tensor segment_;   // int64 per word: the tensor it belongs to
};

// The same hash over `n` bytes in memory, in plain C++ (the reference).
uint64_t device_hash_of_bytes(const void* data, size_t n);

// Hashes every tensor of tensors() and the loss every
// fingerprint.every_steps steps, for `diff` and `rerun --verify`.
class FingerprintObserver : public instrument::TrainObserver {
 public:
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& step) override;

 private:
  std::vector<std::pair<std::string, torch::Tensor>> tensors_;
  bool on_device_ = false;  // hashed with DeviceHasher (the run's fingerprint.hash)
  DeviceHasher device_hash_;
};

}  // namespace trainscope::fingerprint
