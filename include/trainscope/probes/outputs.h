// Where probe results go: the run in the store, a TensorBoard event file,
// the console.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "trainscope/probes/probes.h"
#include "trainscope/store/run_recorder.h"
#include "trainscope/tfevents/tfevents.h"

namespace trainscope::probes {

// Scalars as metrics "probe/<layer>/<kind>/<stat>", histograms under
// "<layer>/<kind>", alerts as run events of kind "alert".
std::shared_ptr<Output> store_output(store::RunRecorder& run);

// Prints each alert once, as a warning line.
std::shared_ptr<Output> console_output();

// A histogram as TensorBoard's HistogramProto: its finite values in
// buckets given by their right edges. NaN and infinities cannot be shown
// there (they stay in the store only); nullopt when no value is finite.
std::optional<tfevents::Histogram> tensorboard_histogram(const Histogram& h);

// A TensorBoard event file (tfevents::Writer): one Event per scalar
// (simple_value) or histogram (HistogramProto). Tags are
// "<layer>/<kind>/<stat>" for scalars, "<layer>/<kind>" for histograms.
class TfEventsWriter : public Output {
 public:
  // Creates `dir`/events.out.tfevents.<unix seconds>.<host>.
  explicit TfEventsWriter(const std::filesystem::path& dir);
  ~TfEventsWriter() override;
  // The event file, valid while this writer is.
  const std::filesystem::path& path() const { return writer_->path(); }

  void scalar(const SeriesPoint& point) override;
  void histogram(const std::string& layer, Kind kind, const Position& at, const Histogram& h,
                 double wall_time) override;
  void close() override;

  // One scalar Event under `tag`; nothing after close(). A failed write
  // does not throw here: close() finds it and logs a warning.
  void write_scalar(const std::string& tag, int64_t step, double wall_time, float value);

 private:
  std::unique_ptr<tfevents::Writer> writer_;
  bool open_ = true;
};

}  // namespace trainscope::probes
