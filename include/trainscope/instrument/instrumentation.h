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
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainscope/instrument/events.h"
#include "trainscope/instrument/unit.h"

namespace trainscope::instrument {

// The observers of one run and their context (see the file comment):
// owned by the event source, driven from its training thread.
class Instrumentation {
 public:
  // `observers` come after every unit's, in the order given; `last` after
  // those (the Trainer's checkpoint writer: a checkpoint holds what every
  // other observer saw).
  // `units`, when not empty, names the only units attached (a source that
  // records some capabilities its own way: the Python package's metrics).
  Instrumentation(const Config& config, store::RunRecorder& run, Source& source,
                  const TrainPosition& position, Observers observers = {}, Observers last = {},
                  const std::vector<std::string>& units = {});
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
  void run_begin() { each(&TrainObserver::on_run_begin); }
  void epoch_begin() { each(&TrainObserver::on_epoch_begin); }
  void batch_begin() { each(&TrainObserver::on_batch_begin); }
  void phase(StepPhase p) { each(&TrainObserver::on_phase, p); }
  void after_forward(const Step& s) { each(&TrainObserver::on_after_forward, s); }
  void after_backward(const Step& s) { each(&TrainObserver::on_after_backward, s); }
  void after_step(const Step& s) { each(&TrainObserver::on_after_step, s); }
  void batch_end(const Step& s) { each(&TrainObserver::on_batch_end, s); }
  void evaluation_end(const Evaluation& e) { each(&TrainObserver::on_evaluation_end, e); }
  void epoch_end(const EpochInfo& e) { each(&TrainObserver::on_epoch_end, e); }
  void checkpoint(const CheckpointInfo& c) { each(&TrainObserver::on_checkpoint, c); }
  void train_end(const TrainResult& r) { each(&TrainObserver::on_train_end, r); }
  void run_end(const TrainResult& r) { each(&TrainObserver::on_run_end, r); }
  // The last event of a failed run: every observer gets on_run_end even
  // when one throws (logged, not rethrown).
  void run_failed(const TrainResult& r);

 private:
  template <typename... Args, typename... Given>
  void each(void (TrainObserver::*event)(const RunContext&, Args...), Given&&... args) {
    for (const auto& o : observers_) (o.get()->*event)(ctx_, args...);
  }

  Observers observers_;
  RunContext ctx_;
};

// The observers every registered unit (or those named in `only`, when not
// empty) attaches to a run of `config`, in the units' order.
Observers unit_observers(const Config& config, const std::vector<std::string>& only = {});

}  // namespace trainscope::instrument
