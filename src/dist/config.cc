// The dist section of a config (config/section.h).
#include "trainscope/dist/config.h"

#include <fmt/format.h>

#include <optional>

#include "trainscope/config/config.h"
#include "trainscope/config/section.h"

namespace trainscope::dist {

namespace {

// Every rank trains a slice of each batch: a world larger than the batch
// would leave a rank without data.
std::optional<config::Violation> check(const config::Config& c) {
  const auto& d = c.section<DistConfig>();
  if (d.nproc > c.train.batch_size)
    return config::Violation{{"dist.nproc", "train.batch_size"},
                             "dist.nproc",
                             fmt::format("must be at most train.batch_size ({}): each rank trains "
                                         "a slice of every batch (got {})",
                                         c.train.batch_size, d.nproc)};
  // Ranks exchange CPU tensors over Gloo; NCCL, the GPUs' backend, is not
  // in this build yet (docs/gpu.md).
  if (d.nproc > 1 && c.compute.device != "cpu")
    return config::Violation{
        {"dist.nproc", "compute.device"},
        "dist.nproc",
        fmt::format("above 1 trains on the CPU (Gloo), and compute.device is {}: data-parallel "
                    "training on GPUs (dist.backend: nccl) is not in this build; train on one GPU "
                    "or on CPU ranks",
                    c.compute.device)};
  return std::nullopt;
}

}  // namespace

TRAINSCOPE_CONFIG_SECTION(
    dist,
    config::Section{
        .name = DistConfig::kName,
        .fields = {config::int_key("dist.nproc", &DistConfig::nproc, 1, 256,
                                   "Processes (ranks) that train this run data-parallel, each on "
                                   "its slice of every batch (`train --nproc N`)"),
                   config::choice_key("dist.backend", &DistConfig::backend, {"gloo", "nccl"},
                                      "Collective backend of c10d (gloo: CPU tensors; nccl: "
                                      "GPUs, not in this build)"),
                   config::double_key("dist.bucket_mb", &DistConfig::bucket_mb,
                                      config::Interval{0.001, 4096, false, false},
                                      "Gradients are all-reduced in buckets of this many MiB"),
                   config::double_key("dist.timeout_s", &DistConfig::timeout_s,
                                      config::Interval{1, 86400, false, false},
                                      "A collective waiting longer than this fails the run"),
                   config::bool_key("dist.check_replicas", &DistConfig::check_replicas,
                                    "Compare every rank's weights with rank 0's at each "
                                    "fingerprinted step (replicas must stay bit-identical)"),
                   config::bool_key("dist.overlap", &DistConfig::overlap,
                                    "Start each bucket's all-reduce as soon as backward has "
                                    "filled it, overlapping communication with the rest of "
                                    "backward (false: all buckets after backward; the same sums)")},
        .check_together = check});

}  // namespace trainscope::dist
