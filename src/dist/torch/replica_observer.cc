// The read-only half of the data-parallel step on each rank (replicas.h):
// every rank's timings, resources and stop request gathered after each
// step, and the replica check at fingerprinted steps. It reads the model
// and the sync's timings and records into rank 0's run; the sync
// (replicas.cc) is what writes the model.
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/dist/replicas.h"
#include "trainscope/env/nvml.h"
#include "trainscope/fingerprint/config.h"
#include "trainscope/fingerprint/fingerprint.h"
#include "trainscope/monitor/procfs.h"
#include "trainscope/store/run_recorder.h"

namespace trainscope::dist {
using core::ErrorKind;
using core::fail;
using instrument::RunContext;
using instrument::Step;

namespace {

// This process's CPU seconds (every thread, user and system) and resident
// memory in MiB: a rank's resources, which rank 0's own sampler cannot see
// (the ranks are its siblings, not its children).
std::pair<double, double> own_usage() {
  const monitor::ProcessStat p = monitor::read_process(getpid());
  return {p.utime_s + p.stime_s, static_cast<double>(p.rss_bytes) / (1024.0 * 1024.0)};
}

// What each rank sends in the per-step exchange, in this order.
enum Field {
  kStepMs,
  kCommMs,
  kStop,
  kCpuS,
  kRssMib,
  kClockS,
  kComputeMs,
  kGpuUtil,
  kGpuPowerW,
  kGpuMemMib,
  kGpuEnergyJ,
  kFields
};

// The series rank 0 records of each rank's GPU figures (none without one).
const std::pair<Field, const char*> kGpuSeries[] = {{kGpuUtil, "gpu_util_percent"},
                                                    {kGpuPowerW, "gpu_power_w"},
                                                    {kGpuMemMib, "gpu_mem_used_mib"},
                                                    {kGpuEnergyJ, "gpu_energy_j"}};

}  // namespace

ReplicaObserver::ReplicaObserver(std::shared_ptr<World> world,
                                 std::shared_ptr<const ReduceTimings> timings,
                                 std::function<bool()> stop_requested)
    : world_(std::move(world)),
      timings_(std::move(timings)),
      stop_requested_(std::move(stop_requested)) {}

void ReplicaObserver::on_run_begin(const RunContext& ctx) {
  nvml_ = std::make_unique<env::Nvml>();  // loaded at run time; none here is fine
  named_ = fingerprint::tensors(ctx.model);
  last_usage_.clear();
  gpu_energy_start_ = -1;
}

void ReplicaObserver::on_batch_begin(const RunContext&) { step_start_ = core::monotonic_now(); }

// This rank's GPU, the one of its index on its host, through NVML when
// the driver is there (-1 where it is not or does not say): utilisation,
// power, memory in use and the energy since the run began.
void ReplicaObserver::read_gpu(std::vector<double>& v) {
  if (!nvml_ || !nvml_->available()) return;
  const auto all = nvml_->sample({static_cast<int64_t>(getpid())});
  if (all.empty()) return;
  const env::GpuSample& g = all[static_cast<size_t>(world_->local_rank()) % all.size()];
  v[kGpuUtil] = g.util_percent;
  v[kGpuPowerW] = g.power_w;
  v[kGpuMemMib] = g.mem_used_bytes >= 0 ? g.mem_used_bytes / (1024.0 * 1024.0) : -1;
  if (g.energy_j >= 0) {
    if (gpu_energy_start_ < 0) gpu_energy_start_ = g.energy_j;
    v[kGpuEnergyJ] = g.energy_j - gpu_energy_start_;
  }
}

// Every rank's step, compute and all-reduce times, its CPU, memory and
// GPU, and whether it was asked to stop: all ranks stop after the same
// step, the first any rank was asked. A rank's wait is how much sooner
// than the slowest it finished its forward and backward: the steps start
// together (this exchange ends the last one), so that is the time it
// spends in the first all-reduce waiting for the others, measured on no
// shared clock.
void ReplicaObserver::exchange(const RunContext& ctx, int64_t step) {
  const bool logged = step % ctx.config.train.log_every_steps == 0;
  std::vector<double> mine(kFields, -1);
  const double now = core::monotonic_now();
  mine[kStepMs] = (now - step_start_) * 1e3;
  mine[kCommMs] = timings_->comm_ms;
  mine[kStop] = stop_requested_ && stop_requested_() ? 1 : 0;
  std::tie(mine[kCpuS], mine[kRssMib]) = own_usage();
  mine[kClockS] = now;
  mine[kComputeMs] = (timings_->backward_end - step_start_) * 1e3;
  if (logged) read_gpu(mine);
  const auto all = world_->allgather(torch::tensor(mine, torch::kFloat64));
  double slowest = 0;
  for (const auto& t : all) {
    if (t[kStop].item<double>() > 0) ctx.request_stop();
    slowest = std::max(slowest, t[kComputeMs].item<double>());
  }
  if (world_->rank() != 0 || !logged) return;
  last_usage_.resize(all.size());
  for (size_t r = 0; r < all.size(); ++r) log_rank(ctx, step, static_cast<int>(r), all[r], slowest);
  ctx.run.log_metric("dist/bytes_reduced", static_cast<double>(timings_->bytes), step);
  for (size_t b = 0; b < timings_->bucket_ms.size(); ++b)
    ctx.run.log_metric("dist/bucket" + std::to_string(b) + "/allreduce_ms", timings_->bucket_ms[b],
                       step);
}

// Rank 0 records rank r's figures (dist/rankR/...).
void ReplicaObserver::log_rank(const RunContext& ctx, int64_t step, int r,
                               const torch::Tensor& figures, double slowest_compute) {
  const auto v = figures.accessor<double, 1>();
  const std::string prefix = "dist/rank" + std::to_string(r) + "/";
  ctx.run.log_metric(prefix + "step_ms", v[kStepMs], step);
  ctx.run.log_metric(prefix + "compute_ms", v[kComputeMs], step);
  ctx.run.log_metric(prefix + "comm_ms", v[kCommMs], step);
  ctx.run.log_metric(prefix + "wait_ms", slowest_compute - v[kComputeMs], step);
  ctx.run.log_metric(prefix + "rss_mib", v[kRssMib], step);
  auto& [last_cpu, last_wall] = last_usage_[static_cast<size_t>(r)];
  if (last_wall > 0 && v[kClockS] > last_wall)  // 1 core = 100, as proc/cpu_percent
    ctx.run.log_metric(prefix + "cpu_percent",
                       100 * (v[kCpuS] - last_cpu) / (v[kClockS] - last_wall), step);
  last_cpu = v[kCpuS];
  last_wall = v[kClockS];
  for (const auto& [field, name] : kGpuSeries)
    if (v[field] >= 0) ctx.run.log_metric(prefix + name, v[field], step);
}

void ReplicaObserver::check_replicas(const RunContext& ctx, int64_t step) {
  std::vector<int64_t> hashes;
  for (const auto& [name, t] : named_)
    hashes.push_back(static_cast<int64_t>(fingerprint::tensor_hash(t)));
  const auto all = world_->allgather(torch::tensor(hashes, torch::kInt64));
  const auto ref = all[0].accessor<int64_t, 1>();
  for (int r = 1; r < world_->size(); ++r) {
    const auto mine = all[r].accessor<int64_t, 1>();
    for (size_t i = 0; i < named_.size(); ++i) {
      if (mine[static_cast<int64_t>(i)] == ref[static_cast<int64_t>(i)]) continue;
      if (world_->rank() == 0) ctx.run.set_tag("dist.replica_mismatch", std::to_string(step));
      fail(ErrorKind::kRuntime,
           "replica check: rank {} ({}) differs from rank 0 in {} after step {}: the replicas "
           "must stay bit-identical",
           r, world_->get("host/" + std::to_string(r)), named_[i].first, step);
    }
  }
}

void ReplicaObserver::on_after_step(const RunContext& ctx, const Step& step) {
  // Rank 0's buffers were broadcast by the sync's after_update.
  exchange(ctx, step.number);
  const int64_t every = ctx.config.section<fingerprint::FingerprintConfig>().every_steps;
  if (ctx.config.section<DistConfig>().check_replicas && every > 0 && step.number % every == 0)
    check_replicas(ctx, step.number);
}

}  // namespace trainscope::dist
