// The probes' records (Store::append_records): histograms of layer tensors
// by step, and the run's events (the alerts the rules raised). Torch-free.
//
// Layouts (docs/store_format.md, "Records"):
//   kind "histograms", key "<layer>/<kind>", step S: f64 low, f64 high,
//     uvarint nan, pos_inf, neg_inf, uvarint n, n x uvarint count
//   kind "events", key event_key(kind, name, source), step S: bytes kind,
//     bytes name, bytes source, bytes message
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/probes/probes.h"
#include "trainscope/store/store.h"

namespace trainscope::probes {

// The record kinds the probes write (see the layouts above).
inline constexpr const char* kHistogramsKind = "histograms";
inline constexpr const char* kEventsKind = "events";

// The distribution of one tensor at one step, as recorded: its key
// ("features.conv1/weights") and the histogram (sum and sum_squares are
// not recorded and read back as 0).
struct StepHistogram {
  std::string key;
  int64_t step = 0;
  double wall_time = 0;  // unix seconds
  Histogram histogram;
};

// Something that happened in a run: an alert raised by a probe rule, ...
struct RunEvent {
  int64_t step = 0;
  double wall_time = 0;  // unix seconds
  std::string kind;      // "alert"
  std::string name;      // "lr_too_high", "nan_origin", ...
  std::string source;    // the layer or series it concerns; may be empty
  std::string message;   // one line for people
};

// The record of `h` (key, step, wall time, the layout above); a
// non-finite low or high is written as 0. Pure: any thread.
store::Record histogram_record(const StepHistogram& h);
// An event already recorded (same step, kind, name and source) is kept as
// it was: its key is made of the three.
store::Record event_record(const RunEvent& e);
// The key of an event: kind and name with '%' and '/' escaped (%25, %2F),
// then the source, joined by '/'; one longer than a record key may be is
// cut and ends in '#' and 16 hex digits of the whole key's SHA-256.
std::string event_key(const std::string& kind, const std::string& name, const std::string& source);

// Histograms of one key by step; every key's (by key, then step) when `key`
// is empty. Throws Error(kStore) for a damaged record.
std::vector<StepHistogram> read_histograms(store::Store& store, std::string_view uuid,
                                           std::string_view key = {});
// The run's events in the order they were recorded.
std::vector<RunEvent> read_events(store::Store& store, std::string_view uuid);

}  // namespace trainscope::probes
