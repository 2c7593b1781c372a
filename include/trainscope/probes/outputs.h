// Where probe results go: the run in the store, a TensorBoard event file,
// the console.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "trainscope/probes/probes.h"
#include "trainscope/store/run_recorder.h"

namespace trainscope::probes {

// Scalars as metrics "probe/<layer>/<kind>/<stat>", histograms under
// "<layer>/<kind>", alerts as run events of kind "alert".
std::shared_ptr<Output> store_output(store::RunRecorder& run);

// Prints each alert once, as a warning line.
std::shared_ptr<Output> console_output();

// CRC-32C (Castagnoli) and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t n);
uint32_t masked_crc32c(const void* data, size_t n);

// A TensorBoard event file: TFRecord framing (length, masked CRC-32C of the
// length, the Event, masked CRC-32C of the Event), a first Event with
// file_version "brain.Event:2", then one Event per scalar (simple_value) or
// histogram (HistogramProto). Tags are "<layer>/<kind>/<stat>" for scalars,
// "<layer>/<kind>" for histograms.
class TfEventsWriter : public Output {
 public:
  // Creates `dir`/events.out.tfevents.<unix seconds>.<host>.
  explicit TfEventsWriter(const std::filesystem::path& dir);
  ~TfEventsWriter() override;
  const std::filesystem::path& path() const { return path_; }

  void scalar(const SeriesPoint& point) override;
  void histogram(const std::string& layer, Kind kind, const Position& at,
                 const Histogram& h) override;
  void close() override;

  void write_scalar(const std::string& tag, int64_t step, double wall_time, float value);

 private:
  void write_record(const std::string& bytes);
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace trainscope::probes
