// What makes N processes one training: on each rank a gradient sync the
// loop calls (instrument/gradient_sync.h) that starts every replica from
// rank 0's weights, averages the gradients of the ranks' slices of each
// batch before the optimizer step and keeps rank 0's buffers; and its
// read-only observer, which checks that the replicas stay bit-identical,
// agrees on when to stop and gives rank 0's run every rank's timings
// (dist/README.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/dist/world.h"
#include "trainscope/env/nvml.h"
#include "trainscope/instrument/events.h"
#include "trainscope/instrument/gradient_sync.h"

namespace trainscope::dist {

// What a rank's last ReplicaSync::synchronize() took, which its observer
// records: written by the sync, read by the observer, both on the
// training thread, between steps. A plain value.
struct ReduceTimings {
  double backward_end = 0;        // core::monotonic_now() when backward had ended
  double comm_ms = 0;             // all-reduce time left after backward
  int64_t bytes = 0;              // bytes all-reduced (gradients and the loss)
  std::vector<double> bucket_ms;  // each bucket's all-reduce, start to Gloo's finishing it
};

// The read-only half of a rank's data-parallel step, which its ReplicaSync
// brings to the run (GradientSync::observers): after every step it gathers
// every rank's step, compute and all-reduce times, CPU, memory and GPU into
// rank 0's run (dist/rankR/..., dist/bucketK/allreduce_ms,
// dist/bytes_reduced) and each rank's stop request, so that all ranks stop
// after the same step (ctx.request_stop()); at fingerprinted steps it
// compares the hash of every parameter and buffer of every rank with rank
// 0's and fails the run naming the first that differs (tag
// dist.replica_mismatch). It writes nothing of the model. Its events come
// on the training thread; its collectives throw as World's do.
class ReplicaObserver : public instrument::TrainObserver {
 public:
  // Joins `world`'s collectives and records `timings` (held shared with
  // the sync that fills them). `stop_requested`: whether this rank was
  // asked to stop (a signal); unset: never.
  ReplicaObserver(std::shared_ptr<World> world, std::shared_ptr<const ReduceTimings> timings,
                  std::function<bool()> stop_requested);
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_batch_begin(const instrument::RunContext& ctx) override;
  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& step) override;

 private:
  void check_replicas(const instrument::RunContext& ctx, int64_t step);
  void exchange(const instrument::RunContext& ctx, int64_t step);
  void log_rank(const instrument::RunContext& ctx, int64_t step, int rank,
                const torch::Tensor& figures, double slowest_compute);
  void read_gpu(std::vector<double>& figures);

  std::shared_ptr<World> world_;
  std::shared_ptr<const ReduceTimings> timings_;
  std::function<bool()> stop_requested_;
  std::vector<std::pair<std::string, torch::Tensor>> named_;  // what the replica check hashes
  double step_start_ = 0;
  std::vector<std::pair<double, double>> last_usage_;  // rank 0: each rank's CPU s, clock s
  std::unique_ptr<env::Nvml> nvml_;  // this rank's GPU figures, when there is a driver
  double gpu_energy_start_ = -1;
};

// One rank's data-parallel step (see the file comment), the only code of a
// data-parallel training that writes the model: begin() overwrites the
// model's parameters and buffers with rank 0's (after checking that every
// rank trains rank 0's config, and tagging rank 0's run dist.*);
// synchronize() replaces each gradient, and the step's loss, with their
// average over the ranks weighted by each rank's share of the batch;
// after_update() broadcasts rank 0's buffers. Its methods run on the
// training thread, its gradient hooks (dist.overlap) inside backward.
// Collectives throw Error(kRuntime) as World's do, which ends the run.
// Holds `world` shared; end() removes the hooks begin() put on the model's
// parameters.
class ReplicaSync : public instrument::GradientSync {
 public:
  // `stop_requested` goes to its ReplicaObserver (made here, once).
  ReplicaSync(std::shared_ptr<World> world, std::function<bool()> stop_requested);
  // Its ReplicaObserver.
  std::vector<std::shared_ptr<instrument::TrainObserver>> observers() override;
  void begin(const instrument::RunContext& ctx) override;
  void before_backward(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void synchronize(const instrument::RunContext& ctx, instrument::Step& step) override;
  void after_update(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void end(const instrument::RunContext& ctx) noexcept override;

 private:
  // A bucket of gradients, reduced as one flat tensor (the last one also
  // carries the step's loss).
  struct Bucket {
    std::vector<torch::Tensor> params;
    std::vector<int64_t> offsets;  // of each parameter's gradient in `flat`
    std::vector<bool> filled;      // by the backward hook this step
    size_t filled_count = 0;
    torch::Tensor flat;
    PendingReduce pending;
    std::string scope;  // the profiler's layer for its wait
  };
  void make_buckets(const instrument::RunContext& ctx);
  void describe_run(const instrument::RunContext& ctx);
  void on_gradient(size_t bucket, size_t index, const torch::Tensor& grad);
  void start_ready_buckets();
  void start(Bucket& b);
  void start_the_rest(const instrument::Step& step);
  void write_back();

  std::shared_ptr<World> world_;
  std::shared_ptr<ReduceTimings> timings_;
  std::shared_ptr<ReplicaObserver> observer_;
  std::vector<Bucket> buckets_;  // parameters in reverse registration order
  size_t next_ = 0;              // the next bucket to start (they start in order)
  bool armed_ = false;           // between before_backward and synchronize
  double weight_ = 0;            // this rank's share of the batch
  std::vector<std::pair<torch::Tensor, unsigned>> hooks_;
  std::vector<torch::Tensor> buffers_;  // rank 0's, broadcast after every step
};

}  // namespace trainscope::dist
