// The instruments of one run, apart from any training loop: its observers
// (every registered unit's that the config turns on, then the caller's
// own), the RunContext they share, and the events that drive them. An
// event source owns one and calls its event methods in the order events.h
// documents: train::Trainer does, and so can a user's own loop, the Python
// package or a data-parallel rank, with the same units unchanged.
//
// Required events: run_begin, then per step batch_begin, after_step and
// batch_end, then train_end (unless the run failed) and run_end. Optional:
// epoch_begin/epoch_end, phase (the profiler times phases with it),
// after_forward (the loss and output: fingerprints of the loss, probes),
// after_backward (gradients), evaluation_end, checkpoint.
//
// Threads: every method on the source's training thread. Ownership: the
// config, recorder, source and position are the caller's and must outlive
// this object; it owns the observers.
//
// Observers only read (events.h). Where observer_check_enabled() (builds
// without NDEBUG; TRAINSCOPE_CHECK_OBSERVERS=1 in any build), every event
// checks it: each parameter's and gradient's write counter (libtorch's
// version counter, which every in-place write through the tensor or a
// view of it bumps) is read before and after each observer's call, and a
// change, or a gradient or parameter replaced, fails the run with
// Error(kRuntime) naming the observer, the event and the tensor. A write
// through `.data()` (a tensor of its own counter) is not seen; buffers are
// not checked (an observer that runs a forward pass may restore them, as
// probes' search for a NaN's origin does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainscope/instrument/events.h"
#include "trainscope/instrument/unit.h"

namespace trainscope::instrument {

// The observers of one run and their context (see the file comment):
// owned by the event source, driven from its training thread.
class Instrumentation {
  using O = TrainObserver;  // the events' names below

 public:
  // Every registered unit that serves `source` attaches (unit_observers);
  // `observers` come after every unit's, in the order given; `last` after
  // those (the Trainer's checkpoint writer: a checkpoint holds what every
  // other observer saw).
  Instrumentation(const Config& config, store::RunRecorder& run, Source& source,
                  const TrainPosition& position, Observers observers = {}, Observers last = {});
  Instrumentation(const Instrumentation&) = delete;
  Instrumentation& operator=(const Instrumentation&) = delete;

  // The context every event passes (the source sets its counters through
  // it); valid while this object is.
  RunContext& context() { return ctx_; }
  // Every observer, in calling order: the units', the caller's, `last`.
  const Observers& observers() const { return observers_; }

  // Each raises the TrainObserver event of its name on every observer, in
  // order. An exception from an observer propagates at once: later observers
  // do not see that event (the source then ends the run with run_failed).
  void run_begin() { each("on_run_begin", &O::on_run_begin); }
  void epoch_begin() { each("on_epoch_begin", &O::on_epoch_begin); }
  void batch_begin() { each("on_batch_begin", &O::on_batch_begin); }
  void phase(StepPhase p) { each("on_phase", &O::on_phase, p); }
  void after_forward(const Step& s) { each("on_after_forward", &O::on_after_forward, s); }
  void after_backward(const Step& s) { each("on_after_backward", &O::on_after_backward, s); }
  void after_step(const Step& s) { each("on_after_step", &O::on_after_step, s); }
  void batch_end(const Step& s) { each("on_batch_end", &O::on_batch_end, s); }
  void evaluation_end(const Evaluation& e) { each("on_evaluation_end", &O::on_evaluation_end, e); }
  void epoch_end(const EpochInfo& e) { each("on_epoch_end", &O::on_epoch_end, e); }
  void checkpoint(const CheckpointInfo& c) { each("on_checkpoint", &O::on_checkpoint, c); }
  void train_end(const TrainResult& r) { each("on_train_end", &O::on_train_end, r); }
  void run_end(const TrainResult& r) { each("on_run_end", &O::on_run_end, r); }
  // The last event of a failed run: every observer gets on_run_end even
  // when one throws (logged, not rethrown).
  void run_failed(const TrainResult& r);

 private:
  // A parameter's and its gradient's identity and write counters.
  struct Mark {
    const void* param = nullptr;
    int64_t param_version = 0;
    const void* grad = nullptr;  // null: no gradient
    int64_t grad_version = 0;
  };
  // Every parameter's, in the model's order (the observer check).
  std::vector<Mark> marks() const;
  // Throws when `observer` changed what `before` marked (the file comment).
  void check_unwritten(const std::vector<Mark>& before, const TrainObserver& observer,
                       const char* event) const;

  template <typename... Args, typename... Given>
  void each(const char* name, void (TrainObserver::*event)(const RunContext&, Args...),
            Given&&... args) {
    if (!check_) {
      for (const auto& o : observers_) (o.get()->*event)(ctx_, args...);
      return;
    }
    // Unchanged after each observer, or the check throws: one mark for all.
    const std::vector<Mark> before = marks();
    for (const auto& o : observers_) {
      (o.get()->*event)(ctx_, args...);
      check_unwritten(before, *o, name);
    }
  }

  Observers observers_;
  RunContext ctx_;
  bool check_ = false;  // observer_check_enabled() when this was made
};

// Whether Instrumentations made from now on check that observers write no
// parameter or gradient (the file comment): set_observer_check()'s value,
// else TRAINSCOPE_CHECK_OBSERVERS from the environment (1 on, 0 off, read
// once), else on in builds without NDEBUG. Any thread.
bool observer_check_enabled();
// Turns the check on or off for Instrumentations made from now on (tests
// of the check; a caller that wants it in a release build); any thread.
void set_observer_check(bool on);

// The observers every registered unit attaches to a run of `config` from
// `source`, in the units' order: all of them, but those that record the
// loop's metrics when the source records its own (Unit::with_own_metrics).
Observers unit_observers(const Config& config, const Source& source);

}  // namespace trainscope::instrument
