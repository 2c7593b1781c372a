// The Hub: a pool of worker threads between the training thread and the
// subscribers, with bounded queues.
//
// Each layer is served by one worker (chosen by its index), so one layer's
// packets are processed in step order; meta packets go to worker 0. When a
// worker's queue is full, publish() either waits for room (block, the
// default: every due step is measured, and training slows instead) or drops
// the packet and counts it (drop: training never waits; dropped() says how
// many, and the probes record it as the series "probe/dropped").
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "trainscope/probes/probes.h"

namespace trainscope::probes {

// How the Hub runs: its worker threads, each one's queue, and what a full
// queue does (see the file comment).
struct HubOptions {
  int workers = 1;
  size_t queue_capacity = 64;  // packets per worker
  bool block_when_full = true;
  int64_t every = 10;  // default period for subscribers whose every() is 0
};

// The pool (see the file comment). Owned and driven by one thread, the
// training thread: publish, kinds_due and close are called from it only;
// sink() may be used from any thread (it locks); dropped() from any.
class Hub {
 public:
  // Starts max(1, options.workers) worker threads at once. Holds the
  // subscribers and outputs shared until it is destroyed.
  Hub(std::vector<std::shared_ptr<Subscriber>> subscribers,
      std::vector<std::shared_ptr<Output>> outputs, HubOptions options);
  ~Hub();  // closes
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  // The kinds some subscriber wants at `step` (empty: nothing is due).
  std::set<Kind> kinds_due(int64_t step) const;
  // Whether any subscriber wants meta packets, or batch labels and outputs
  // (fixed at construction).
  bool wants_meta() const { return wants_meta_; }
  bool wants_batch_tensors() const { return wants_batch_tensors_; }

  // Queues `packet` for the worker of its layer (index modulo the workers);
  // packet.layer must be set and outlive the Hub's processing of it. When
  // that queue is full it waits, or drops the packet (block_when_full).
  // Not after close().
  void publish(LayerPacket packet);
  // Meta packets in order, as one hand-over (the publisher gathers a
  // period's batches: one queue operation per period, not per step).
  void publish(std::vector<MetaPacket> packets);
  // Publishes directly into the sink from the calling thread (alerts found
  // on the training thread, such as the origin of a NaN).
  Sink& sink();

  // Processes everything queued, calls on_end of every subscriber, closes
  // the outputs. Idempotent.
  void close();
  // Packets dropped so far because a queue was full (drop mode); any thread.
  int64_t dropped() const { return dropped_.load(); }

 private:
  class Dispatch;
  struct Worker;
  using Item = std::variant<LayerPacket, std::vector<MetaPacket>>;
  void enqueue(size_t worker, Item item);
  void run(Worker& w);
  void deliver(const Item& item);
  bool due(const Subscriber& s, int64_t step) const;

  std::vector<std::shared_ptr<Subscriber>> subscribers_;
  std::unique_ptr<Dispatch> dispatch_;
  HubOptions options_;
  bool wants_meta_ = false;
  bool wants_batch_tensors_ = false;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<int64_t> dropped_{0};
  bool closed_ = false;
};

}  // namespace trainscope::probes
