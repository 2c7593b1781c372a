// What makes N processes one training: an observer on each rank that
// starts every replica from rank 0's weights, averages the gradients of the
// ranks' slices of each batch before the optimizer step, checks that the
// replicas stay bit-identical, and gives rank 0's run every rank's timings
// (dist/README.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/dist/world.h"
#include "trainscope/env/nvml.h"
#include "trainscope/instrument/events.h"

namespace trainscope::dist {

// One rank's data-parallel observer (see the file comment). Unlike every
// other observer it changes the training: at run begin it overwrites the
// model's parameters and buffers with rank 0's; after backward it replaces
// each gradient, and the step's loss, with their average over the ranks
// weighted by each rank's share of the batch; after each step it
// broadcasts rank 0's buffers and requests a stop on every rank when any
// rank was asked to. Its events come on the training thread; its gradient
// hooks run inside backward. Collectives throw Error(kRuntime) as World's
// do, which ends the run. Holds `world` shared; the hooks it puts on the
// model's parameters are removed at run end.
class ReplicaObserver : public instrument::TrainObserver {
 public:
  // `stop_requested`: whether this rank was asked to stop (a signal); the
  // ranks agree after every step, and all stop after the same one.
  ReplicaObserver(std::shared_ptr<World> world, std::function<bool()> stop_requested);
  void on_run_begin(const instrument::RunContext& ctx) override;
  void on_batch_begin(const instrument::RunContext& ctx) override;
  void on_after_forward(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void on_after_backward(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void on_after_step(const instrument::RunContext& ctx, const instrument::Step& step) override;
  void on_run_end(const instrument::RunContext& ctx, const instrument::TrainResult& r) override;

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
    std::string scope;     // the profiler's layer for its wait
    double reduce_ms = 0;  // its all-reduce, start to finish, this step
  };
  void make_buckets(const instrument::RunContext& ctx);
  void on_gradient(size_t bucket, size_t index, const torch::Tensor& grad);
  void start_ready_buckets();
  void start(Bucket& b);
  void describe_run(const instrument::RunContext& ctx);
  void check_replicas(const instrument::RunContext& ctx, int64_t step);
  void exchange(const instrument::RunContext& ctx, int64_t step);
  void log_rank(const instrument::RunContext& ctx, int64_t step, int rank,
                const torch::Tensor& figures, double slowest_compute);
  void read_gpu(std::vector<double>& figures);

  std::shared_ptr<World> world_;
  std::function<bool()> stop_requested_;
  std::vector<Bucket> buckets_;  // parameters in reverse registration order
  size_t next_ = 0;              // the next bucket to start (they start in order)
  bool armed_ = false;           // between after_forward and after_backward
  double weight_ = 0;            // this rank's share of the batch
  std::vector<std::pair<torch::Tensor, unsigned>> hooks_;
  std::vector<std::pair<std::string, torch::Tensor>> named_;  // what the replica check hashes
  std::vector<torch::Tensor> buffers_;  // rank 0's, broadcast after every step
  double step_start_ = 0, comm_ms_ = 0, compute_ms_ = 0;
  std::vector<std::pair<double, double>> last_usage_;  // rank 0: each rank's CPU s, clock s
  int64_t bytes_ = 0;
  std::unique_ptr<env::Nvml> nvml_;  // this rank's GPU figures, when there is a driver
  double gpu_energy_start_ = -1;
};

}  // namespace trainscope::dist
