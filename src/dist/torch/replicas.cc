// The data-parallel step on each rank (replicas.h), the gradient sync the
// loop calls between backward and its observers' on_after_backward. The
// gradients are reduced in buckets of dist.bucket_mb taken in reverse
// registration order (the order backward produces them, as PyTorch's DDP
// buckets them), each rank's slice weighted by its share of the global
// batch so that the sum is the global batch's mean gradient: the same
// arithmetic as one process would do, but for the order of the sum. The
// step's loss is reduced with the last bucket. With dist.overlap, c10d
// Reducer's schedule: a hook on each parameter copies its gradient into its
// bucket as backward produces it, and a full bucket's all-reduce starts at
// once (buckets start in order, on every rank the same) while backward goes
// on; after backward the last bucket starts and every one is waited for.
// Without overlap the buckets are filled from the gradients after
// backward: the same sums.
#include "trainscope/dist/replicas.h"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <map>

#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/fingerprint/fingerprint.h"
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

ReplicaSync::ReplicaSync(std::shared_ptr<World> world, std::function<bool()> stop_requested)
    : world_(std::move(world)),
      timings_(std::make_shared<ReduceTimings>()),
      observer_(std::make_shared<ReplicaObserver>(world_, timings_, std::move(stop_requested))) {}

std::vector<std::shared_ptr<instrument::TrainObserver>> ReplicaSync::observers() {
  return {observer_};
}

void ReplicaSync::describe_run(const RunContext& ctx) {
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

void ReplicaSync::make_buckets(const RunContext& ctx) {
  const auto& c = ctx.config.section<DistConfig>();
  const double limit = c.bucket_mb * 1024 * 1024;
  auto params = ctx.model.parameters();
  buckets_.clear();
  next_ = 0;
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
  timings_->bucket_ms.assign(buckets_.size(), 0);
}

void ReplicaSync::begin(const RunContext& ctx) {
  make_buckets(ctx);
  buffers_ = ctx.model.buffers();
  describe_run(ctx);
  // Every replica starts from rank 0's weights and buffers.
  std::vector<torch::Tensor> all;
  for (auto& [name, t] : fingerprint::tensors(ctx.model)) all.push_back(t);
  broadcast_from_0(*world_, all);
}

void ReplicaSync::end(const RunContext&) noexcept {
  for (auto& [param, hook] : hooks_) param.remove_hook(hook);
  hooks_.clear();
}

void ReplicaSync::before_backward(const RunContext&, const Step& step) {
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
void ReplicaSync::on_gradient(size_t bucket, size_t index, const torch::Tensor& grad) {
  Bucket& b = buckets_[bucket];
  if (!armed_ || !grad.defined() || b.filled[index]) return;
  torch::NoGradGuard no_grad;
  b.flat.narrow(0, b.offsets[index], grad.numel()).copy_(grad.reshape(-1));
  b.filled[index] = true;
  ++b.filled_count;
  start_ready_buckets();
}

void ReplicaSync::start_ready_buckets() {
  // The last bucket waits for the loss, known after backward.
  while (next_ + 1 < buckets_.size() &&
         buckets_[next_].filled_count == buckets_[next_].params.size())
    start(buckets_[next_++]);
}

void ReplicaSync::start(Bucket& b) {
  // A rank whose slice of this batch is empty (an epoch's last batch has
  // fewer rows than the world has ranks) adds nothing: its loss over 0 rows
  // is NaN, and 0 * NaN would make the global batch's loss NaN on every rank.
  std::vector<torch::Tensor> flat = {weight_ == 0 ? b.flat.zero_() : b.flat.mul_(weight_)};
  b.pending = world_->allreduce_sum_async(flat);
}

// What no hook filled (no overlap, a parameter backward did not reach):
// its gradient now, zeros when it has none; the loss into the last
// bucket; and every bucket not started yet starts.
void ReplicaSync::start_the_rest(const Step& step) {
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
}

// Waits for each bucket, in order, and makes its sums the gradients.
void ReplicaSync::write_back() {
  for (size_t k = 0; k < buckets_.size(); ++k) {
    Bucket& b = buckets_[k];
    {
      // The profiler's row for this bucket: the time backward's thread
      // waits for it (what overlap did not hide).
      RECORD_USER_SCOPE(b.scope.c_str());
      timings_->bucket_ms[k] = b.pending.wait() * 1e3;
    }
    b.pending = PendingReduce();
    timings_->bytes += b.flat.numel() * b.flat.element_size();
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto& p = b.params[i];
      auto reduced = b.flat.narrow(0, b.offsets[i], p.numel()).view_as(p);
      if (p.grad().defined())
        p.mutable_grad().copy_(reduced);
      else
        p.mutable_grad() = reduced.clone();
    }
  }
}

void ReplicaSync::synchronize(const RunContext&, Step& step) {
  torch::NoGradGuard no_grad;
  armed_ = false;
  const double started = core::monotonic_now();
  timings_->backward_end = started;
  timings_->bytes = 0;
  start_the_rest(step);
  write_back();
  // The step's loss is the global batch's from here on (the loop's
  // loss_value, the observers' on_after_backward and on_after_step).
  step.loss.detach().copy_(buckets_.back().flat[-1]);
  timings_->comm_ms = (core::monotonic_now() - started) * 1e3;
}

void ReplicaSync::after_update(const RunContext&, const Step&) {
  // BatchNorm's running statistics: rank 0's (DDP's broadcast_buffers).
  if (!buffers_.empty()) broadcast_from_0(*world_, buffers_);
}

}  // namespace trainscope::dist
