// The data-parallel section of a config: how many processes train one run
// together and how they reduce their gradients (dist/README.md).
#pragma once

#include <cstdint>
#include <string>

namespace trainscope::dist {

// The `dist` section (config.section<DistConfig>()): a plain value, read
// by the launcher, World and ReplicaSync; ranges are checked when a
// config is parsed (src/dist/config.cc).
struct DistConfig {
  static constexpr const char* kName = "dist";
  int64_t nproc = 1;             // ranks of one training (1: not data-parallel)
  std::string backend = "gloo";  // c10d backend: gloo (CPU); nccl on GPUs
  double bucket_mb = 25;         // gradients are all-reduced in buckets of this size
  double timeout_s = 300;        // a collective that waits longer fails the run
  bool check_replicas = true;    // compare every rank's weights at fingerprinted steps
  bool overlap = true;           // start a bucket's all-reduce as soon as backward fills it
};

}  // namespace trainscope::dist
