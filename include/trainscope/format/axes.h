// What a chart puts on its x axis, which series share a chart and which are
// bookkeeping: the rules the dashboard and `trainscope plot` both follow.
//
// The trainer records step metrics at the global optimizer step and epoch
// metrics (evaluation, train/accuracy, epoch_time_s, ...) at the 1-based
// epoch (metrics/observer.h); the "epoch" series holds value e at the step
// that ended epoch e. So a point of an epoch series at "step" 2 was measured
// at the end of epoch 2, which is the step the "epoch" series gives for 2.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::format {

// Where each epoch of a run ended, from its "epoch" series.
struct EpochEnds {
  std::map<int64_t, int64_t> step_of;  // epoch (1-based) -> global step at its end
  int64_t last_step = 0;               // the run's last step of any step series

  // Whether the run recorded no epoch end.
  bool empty() const { return step_of.empty(); }
  // The step at which epoch e ended; past the last recorded end (a live
  // run, or a run stopped inside an epoch that was evaluated there), the
  // last end plus whole epochs of the last one's length, at most last_step.
  double step_at_end(int64_t epoch) const;
  // The fractional epoch of a step: the end of epoch e is e, steps between
  // two ends are interpolated, steps past the last end are extrapolated by
  // the last epoch's length. Without ends: 0.
  double epoch_at(double step) const;
};

// What a series' recorded "step" counts: global steps, or 1-based epochs.
enum class XKind { kStep, kEpoch };
// Whether a series is about what the model learnt or how the run ran.
enum class SeriesGroup { kLearning, kBookkeeping };

// One series' place on a run's charts.
struct SeriesAxis {
  std::string key;
  XKind x = XKind::kStep;  // what the series' recorded "step" counts
  SeriesGroup group = SeriesGroup::kLearning;
  // The chart it shares: learning curves of the same quantity overlay
  // (train/loss, train/epoch_loss, test/loss and val/loss on "loss";
  // train/accuracy and test/accuracy on "accuracy"); any other series has a
  // chart of its own, named by its key.
  std::string chart;
};

// "step" / "epoch", and "learning" / "bookkeeping": static strings.
const char* to_string(XKind x);
const char* to_string(SeriesGroup g);

// Bookkeeping: series about how the training ran, not what it learnt:
// epoch, lr, epoch_time_s, eval_time_s, train/step_ms,
// time_to_first_batch_s, samples_per_s, steps_per_s, time_to_target_s,
// epochs_to_target, and any key ending in _time_s, _ms or _per_s.
SeriesGroup series_group(const std::string& key);
// The chart a learning series shares (see SeriesAxis::chart).
std::string chart_of(const std::string& key);

// A run's epoch ends and every series' axis. A series counts epochs when
// the run has an "epoch" series, the key is one the trainer records per
// epoch (<split>/loss, accuracy, macro_f1, top5, roc_auc for a split other
// than train; train/epoch_loss, train/accuracy, epoch_time_s, eval_time_s,
// samples_per_s, steps_per_s, time_to_target_s, epochs_to_target) and its
// last step is at most the last epoch + 1 (a source that logged such a key
// at global steps stays on steps).
struct RunAxes {
  EpochEnds epochs;
  std::map<std::string, SeriesAxis> series;  // by key

  // The axis of `key`; a key the run lacks gets a default axis (steps,
  // learning, no chart), valid for the program's life.
  const SeriesAxis& of(const std::string& key) const;
};
// SUMMARIES: the run's metric summaries, when the caller has read them.
// Reads the run's "epoch" series (and, in the first form, its metric
// summaries) from `store`; a run without them has no epoch ends and every
// series on steps. Throws what the store throws.
RunAxes run_axes(store::Store& store, const std::string& uuid);
RunAxes run_axes(store::Store& store, const std::string& uuid,
                 const std::vector<store::MetricSummary>& summaries);

// Where a recorded point of a series sits on each axis.
struct PointX {
  double step = 0;   // the global step (an epoch series: the step its epoch ended)
  double epoch = 0;  // the fractional epoch (an epoch series: the epoch itself)
};
// Where `recorded_step` of `series` sits on each axis. Pure: any thread.
PointX point_x(const RunAxes& axes, const SeriesAxis& series, int64_t recorded_step);

}  // namespace trainscope::format
