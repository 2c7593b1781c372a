// The data-parallel step on each rank (replicas.h). The gradients are
// reduced in buckets of dist.bucket_mb taken in reverse registration order
// (the order backward produces them, as PyTorch's DDP buckets them), each
// rank's slice weighted by its share of the global batch so that the sum is
// the global batch's mean gradient: the same arithmetic as one process
// would do, but for the order of the sum. The step's loss is reduced with
// the last bucket. With dist.overlap, c10d Reducer's schedule: a hook on
// each parameter copies its gradient into its bucket as backward produces
// it, and a full bucket's all-reduce starts at once (buckets start in
// order, on every rank the same) while backward goes on; after backward
// the last bucket starts and every one is waited for. Without overlap the
// buckets are filled from the gradients after backward: the same sums.
#include "trainscope/dist/replicas.h"

#include <ATen/record_function.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
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

torch::Tensor flat_of(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : ts) parts.push_back(t.reshape(-1));
  return torch::cat(parts);
}

void unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& ts) {
  int64_t at = 0;
  for (auto& t : ts) {
    t.copy_(flat.narrow(0, at, t.numel()).view_as(t));
    at += t.numel();
  }
}

// This process's CPU seconds (every thread, user and system) and resident
// memory in MiB: a rank's resources, which rank 0's own sampler cannot see
// (the ranks are its siblings, not its children).
std::pair<double, double> own_usage() {
  const monitor::ProcessStat p = monitor::read_process(getpid());
  return {p.utime_s + p.stime_s, static_cast<double>(p.rss_bytes) / (1024.0 * 1024.0)};
}

// Rank 0's values of `ts` on every rank, one broadcast per dtype.
void broadcast_from_0(World& world, const std::vector<torch::Tensor>& ts) {
  torch::NoGradGuard no_grad;
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const auto& t : ts) by_type[t.scalar_type()].push_back(t);
  for (auto& [type, group] : by_type) {
    std::vector<torch::Tensor> flat = {flat_of(group)};
    world.broadcast(flat, 0);
    unflatten(flat[0], group);
  }
}

}  // namespace

ReplicaObserver::ReplicaObserver(std::shared_ptr<World> world, std::function<bool()> stop_requested)
    : world_(std::move(world)), stop_requested_(std::move(stop_requested)) {}

void ReplicaObserver::describe_run(const RunContext& ctx) {
  const std::string me = std::to_string(world_->rank());
  world_->set("host/" + me, world_->host());
  world_->set("addr/" + me, world_->address());
  const std::string config = core::sha256_hex(config::to_yaml(ctx.config));
  if (world_->rank() == 0) {
    world_->set("config", config);
    std::string hosts, addresses;
    for (int r = 0; r < world_->size(); ++r) {
      if (r > 0) hosts.push_back(','), addresses.push_back(',');
      hosts.append(world_->get("host/" + std::to_string(r)));
      addresses.append(world_->get("addr/" + std::to_string(r)));
    }
    const auto& c = ctx.config.section<DistConfig>();
    ctx.run.set_tag("dist.world_size", std::to_string(world_->size()));
    ctx.run.set_tag("dist.backend", c.backend);
    ctx.run.set_tag("dist.hosts", hosts);
    ctx.run.set_tag("dist.addresses", addresses);
    ctx.run.set_tag("dist.rendezvous", world_->source());
    ctx.run.set_tag("dist.buckets", std::to_string(buckets_.size()));
    world_->set("run", ctx.run.uuid());
  } else if (world_->get("config") != config) {
    fail(ErrorKind::kUsage,
         "rank {}'s config differs from rank 0's: every rank must train the same config (the "
         "same file and --set values)",
         world_->rank());
  }
}

void ReplicaObserver::make_buckets(const RunContext& ctx) {
  const auto& c = ctx.config.section<DistConfig>();
  const double limit = c.bucket_mb * 1024 * 1024;
  auto params = ctx.model.parameters();
  double size = limit;  // start a new bucket
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const double bytes = static_cast<double>(it->numel() * it->element_size());
    if (size + bytes > limit && !(buckets_.size() && buckets_.back().params.empty())) {
      buckets_.emplace_back();
      size = 0;
    }
    buckets_.back().params.push_back(*it);
    size += bytes;
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    int64_t at = 0;
    for (size_t i = 0; i < bucket.params.size(); ++i) {
      bucket.offsets.push_back(at);
      at += bucket.params[i].numel();
      if (c.overlap && bucket.params[i].requires_grad())
        hooks_.emplace_back(bucket.params[i],
                            bucket.params[i].register_hook([this, b, i](const torch::Tensor& grad) {
                              on_gradient(b, i, grad);
                            }));
    }
    const bool last = b + 1 == buckets_.size();
    bucket.flat = torch::empty({at + (last ? 1 : 0)}, bucket.params[0].options());
    bucket.filled.assign(bucket.params.size(), false);
    bucket.scope =
        std::string(instrument::kScopeLayerPrefix) + "dist: all-reduce bucket " + std::to_string(b);
  }
}

void ReplicaObserver::on_run_begin(const RunContext& ctx) {
  nvml_ = std::make_unique<env::Nvml>();  // loaded at run time; none here is fine
  make_buckets(ctx);
  named_ = fingerprint::tensors(ctx.model);
  buffers_ = ctx.model.buffers();
  describe_run(ctx);
  // Every replica starts from rank 0's weights and buffers.
  std::vector<torch::Tensor> all;
  for (auto& [name, t] : named_) all.push_back(t);
  broadcast_from_0(*world_, all);
}

void ReplicaObserver::on_run_end(const RunContext&, const instrument::TrainResult&) {
  for (auto& [param, hook] : hooks_) param.remove_hook(hook);
  hooks_.clear();
}

void ReplicaObserver::on_batch_begin(const RunContext&) { step_start_ = core::monotonic_now(); }

void ReplicaObserver::on_after_forward(const RunContext&, const Step& step) {
  const double local = static_cast<double>(step.targets.size(0));
  weight_ = step.batch_samples > 0 ? local / static_cast<double>(step.batch_samples)
                                   : 1.0 / world_->size();
  next_ = 0;
  for (auto& b : buckets_) {
    b.filled.assign(b.params.size(), false);
    b.filled_count = 0;
  }
  armed_ = true;
}

// Backward produced a parameter's gradient (dist.overlap): into its
// bucket, and the buckets that are full start, in order.
void ReplicaObserver::on_gradient(size_t bucket, size_t index, const torch::Tensor& grad) {
  Bucket& b = buckets_[bucket];
  if (!armed_ || !grad.defined() || b.filled[index]) return;
  torch::NoGradGuard no_grad;
  b.flat.narrow(0, b.offsets[index], grad.numel()).copy_(grad.reshape(-1));
  b.filled[index] = true;
  ++b.filled_count;
  start_ready_buckets();
}

void ReplicaObserver::start_ready_buckets() {
  // The last bucket waits for the loss, known after backward.
  while (next_ + 1 < buckets_.size() &&
         buckets_[next_].filled_count == buckets_[next_].params.size())
    start(buckets_[next_++]);
}

void ReplicaObserver::start(Bucket& b) {
  // A rank whose slice of this batch is empty (an epoch's last batch has
  // fewer rows than the world has ranks) adds nothing: its loss over 0 rows
  // is NaN, and 0 * NaN would make the global batch's loss NaN on every rank.
  std::vector<torch::Tensor> flat = {weight_ == 0 ? b.flat.zero_() : b.flat.mul_(weight_)};
  b.pending = world_->allreduce_sum_async(flat);
}

void ReplicaObserver::on_after_backward(const RunContext&, const Step& step) {
  torch::NoGradGuard no_grad;
  armed_ = false;
  const double started = core::monotonic_now();
  compute_ms_ = (started - step_start_) * 1e3;
  bytes_ = 0;
  // What no hook filled (no overlap, a parameter backward did not reach):
  // its gradient now, zeros when it has none.
  for (size_t k = next_; k < buckets_.size(); ++k) {
    Bucket& b = buckets_[k];
    for (size_t i = 0; i < b.params.size(); ++i) {
      if (b.filled[i]) continue;
      auto dst = b.flat.narrow(0, b.offsets[i], b.params[i].numel());
      if (b.params[i].grad().defined())
        dst.copy_(b.params[i].grad().reshape(-1));
      else
        dst.zero_();
    }
    if (k + 1 == buckets_.size())
      b.flat.narrow(0, b.flat.numel() - 1, 1).copy_(step.loss.reshape(1));
    start(b);
  }
  next_ = buckets_.size();
  for (auto& b : buckets_) {
    {
      // The profiler's row for this bucket: the time backward's thread
      // waits for it (what overlap did not hide).
      RECORD_USER_SCOPE(b.scope.c_str());
      b.reduce_ms = b.pending.wait() * 1e3;
    }
    b.pending = PendingReduce();
    bytes_ += b.flat.numel() * b.flat.element_size();
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto& p = b.params[i];
      auto reduced = b.flat.narrow(0, b.offsets[i], p.numel()).view_as(p);
      if (p.grad().defined())
        p.mutable_grad().copy_(reduced);
      else
        p.mutable_grad() = reduced.clone();
    }
  }
  step.loss.detach().copy_(buckets_.back().flat[-1]);
  comm_ms_ = (core::monotonic_now() - started) * 1e3;
}

namespace {

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
  mine[kCommMs] = comm_ms_;
  mine[kStop] = stop_requested_ && stop_requested_() ? 1 : 0;
  std::tie(mine[kCpuS], mine[kRssMib]) = own_usage();
  mine[kClockS] = now;
  mine[kComputeMs] = compute_ms_;
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
  ctx.run.log_metric("dist/bytes_reduced", static_cast<double>(bytes_), step);
  for (size_t b = 0; b < buckets_.size(); ++b)
    ctx.run.log_metric("dist/bucket" + std::to_string(b) + "/allreduce_ms", buckets_[b].reduce_ms,
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
  // BatchNorm's running statistics: rank 0's (DDP's broadcast_buffers).
  if (!buffers_.empty()) broadcast_from_0(*world_, buffers_);
  exchange(ctx, step.number);
  const int64_t every = ctx.config.section<fingerprint::FingerprintConfig>().every_steps;
  if (ctx.config.section<DistConfig>().check_replicas && every > 0 && step.number % every == 0)
    check_replicas(ctx, step.number);
}

}  // namespace trainscope::dist
