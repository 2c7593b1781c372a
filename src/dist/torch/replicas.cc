// The data-parallel step on each rank (replicas.h). The gradients are
// reduced after the backward pass, in buckets of dist.bucket_mb taken in
// reverse registration order (the order backward produces them, as
// PyTorch's DDP buckets them), each rank's slice weighted by its share of
// the global batch so that the sum is the global batch's mean gradient:
// the same arithmetic as one process would do, but for the order of the
// sum. The step's loss is reduced with them. (No overlap with backward
// yet: c10d's Reducer would start a bucket as soon as its gradients are
// ready.)
#include "trainscope/dist/replicas.h"

#include <torch/torch.h>
#include <unistd.h>

#include <map>

#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
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

void ReplicaObserver::on_run_begin(const RunContext& ctx) {
  const auto& c = ctx.config.section<DistConfig>();
  const double limit = c.bucket_mb * 1024 * 1024;
  auto params = ctx.model.parameters();
  double size = limit;  // start a new bucket
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const double bytes = static_cast<double>(it->numel() * it->element_size());
    if (size + bytes > limit && !(buckets_.size() && buckets_.back().empty())) {
      buckets_.emplace_back();
      size = 0;
    }
    buckets_.back().push_back(*it);
    size += bytes;
  }
  named_ = fingerprint::tensors(ctx.model);
  buffers_ = ctx.model.buffers();
  describe_run(ctx);
  // Every replica starts from rank 0's weights and buffers.
  std::vector<torch::Tensor> all;
  for (auto& [name, t] : named_) all.push_back(t);
  broadcast_from_0(*world_, all);
}

void ReplicaObserver::on_batch_begin(const RunContext&) { step_start_ = core::monotonic_now(); }

void ReplicaObserver::on_after_backward(const RunContext&, const Step& step) {
  torch::NoGradGuard no_grad;
  const double local = static_cast<double>(step.targets.size(0));
  const double global =
      step.batch_samples > 0 ? static_cast<double>(step.batch_samples) : local * world_->size();
  const double weight = local / global;
  const double started = core::monotonic_now();
  bytes_ = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::vector<torch::Tensor> grads;
    for (auto& p : buckets_[b]) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    const bool last = b + 1 == buckets_.size();
    if (last) grads.push_back(step.loss.detach().reshape(1));
    std::vector<torch::Tensor> flat = {flat_of(grads).mul_(weight)};
    world_->allreduce_sum(flat);
    bytes_ += flat[0].numel() * flat[0].element_size();
    if (last) {
      step.loss.detach().copy_(flat[0].narrow(0, flat[0].numel() - 1, 1).reshape({}));
      grads.pop_back();
      unflatten(flat[0].narrow(0, 0, flat[0].numel() - 1), grads);
    } else {
      unflatten(flat[0], grads);
    }
  }
  comm_ms_ = (core::monotonic_now() - started) * 1e3;
}

// Every rank's step and all-reduce times, its CPU and memory, and whether
// it was asked to stop: all ranks stop after the same step, the first any
// rank was asked.
void ReplicaObserver::exchange(const RunContext& ctx, int64_t step) {
  const double now = core::monotonic_now();
  const double stop = stop_requested_ && stop_requested_() ? 1 : 0;
  const auto [cpu, rss] = own_usage();
  const auto all = world_->allgather(
      torch::tensor({(now - step_start_) * 1e3, comm_ms_, stop, cpu, rss, now}, torch::kFloat64));
  for (const auto& t : all)
    if (t[2].item<double>() > 0) ctx.request_stop();
  if (world_->rank() != 0 || step % ctx.config.train.log_every_steps != 0) return;
  last_usage_.resize(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    const auto v = all[r].accessor<double, 1>();
    const std::string prefix = "dist/rank" + std::to_string(r) + "/";
    ctx.run.log_metric(prefix + "step_ms", v[0], step);
    ctx.run.log_metric(prefix + "comm_ms", v[1], step);
    ctx.run.log_metric(prefix + "rss_mib", v[4], step);
    auto& [last_cpu, last_wall] = last_usage_[r];
    if (last_wall > 0 && v[5] > last_wall)  // 1 core = 100, as proc/cpu_percent
      ctx.run.log_metric(prefix + "cpu_percent", 100 * (v[3] - last_cpu) / (v[5] - last_wall),
                         step);
    last_cpu = v[3];
    last_wall = v[5];
  }
  ctx.run.log_metric("dist/bytes_reduced", static_cast<double>(bytes_), step);
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
