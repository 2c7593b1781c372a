// The one step a training loop takes besides its own that may change the
// training: a gradient synchronisation between replicas (data-parallel
// training's all-reduce, dist/replicas.h), the strategy around the loop
// that Lightning calls a Strategy and PyTorch's DDP runs from its reducer's
// hooks. Observers only read (events.h); what a distributed training must
// write (the replicas' common start, the global batch's gradients and
// loss, rank 0's buffers) it writes here, at fixed points of the step, so
// that every observer sees the state the optimizer applies:
//
//   begin                   then on_run_begin
//   on_after_forward        then before_backward, backward, synchronize,
//   on_after_backward       optimizer step, after_update, on_after_step
//   on_run_end              then end
//
// A loop with no sync (one process) trains as if each call did nothing.
// Threads: every method on the loop's training thread (hooks a sync puts
// on parameters run inside backward, on that thread or autograd's).
// Ownership: the loop holds the sync shared for the run; the RunContext
// and Step it passes are the loop's and valid during the call only.
#pragma once

#include <memory>
#include <vector>

#include "trainscope/instrument/events.h"

namespace trainscope::instrument {

// A gradient synchronisation as a loop drives it (see the file comment).
// train::Trainer calls it (TrainOptions::gradient_sync); an exception from
// any method but end() ends the run as failed.
class GradientSync {
 public:
  virtual ~GradientSync() = default;

  // Read-only observers that come with the sync (timings, a check of the
  // replicas): the loop adds them after the units' and before its caller's
  // own. Called once per run, before begin(); they follow events.h's rules.
  virtual std::vector<std::shared_ptr<TrainObserver>> observers() { return {}; }
  // Before any observer's on_run_begin: the run exists, the model, the
  // optimizer and a checkpoint's state are loaded. May overwrite the
  // model's parameters and buffers (every replica starts from one state)
  // and tag the run; throws Error to refuse it (a replica of another
  // config).
  virtual void begin(const RunContext& ctx) = 0;
  // After the observers' on_after_forward, before backward: `step.loss` is
  // this process's loss on its slice of the batch.
  virtual void before_backward(const RunContext& ctx, const Step& step) {}
  // After backward, before the observers' on_after_backward: replaces each
  // parameter's gradient, and `step.loss` in place, with the ones the
  // optimizer applies (the global batch's). Throws Error when a peer is
  // gone or times out.
  virtual void synchronize(const RunContext& ctx, Step& step) = 0;
  // After the optimizer's step, before the observers' on_after_step: may
  // overwrite the model's buffers (rank 0's running statistics).
  virtual void after_update(const RunContext& ctx, const Step& step) {}
  // After the run's last event, finished, stopped or failed (also when
  // begin() threw): releases what begin() set up (hooks on the
  // parameters). Called once; must not throw.
  virtual void end(const RunContext& ctx) noexcept {}
};

}  // namespace trainscope::instrument
