// drift: how far each weight tensor has moved from where it started (the
// distance from initialization, ||w - w0|| / ||w0||). Its config section,
// its record kind and codec, and its view are in drift.cc (libtrainscope:
// no libtorch, so `runs view` and the dashboard read it); its observer is
// torch/observer.cc (libtrainscope_train). README.md says what it measures.
#pragma once

#include <cstdint>
#include <string>

#include "trainscope/store/store.h"

namespace trainscope::drift {

// drift.every: measure every N steps (0: off, the default).
struct DriftConfig {
  static constexpr const char* kName = "drift";
  int64_t every = 0;
};

// The record kind: one record per weight tensor and measured step, keyed by
// the tensor's name.
inline constexpr const char* kKind = "drift";

// What one record holds: the relative distance, and the step whose weights
// it is measured from (0 for a run trained from its start; the step a
// resumed session began at, since the weights before it are not in memory).
struct Drift {
  double relative = 0;
  int64_t from_step = 0;
};

// The payload of a record (f64 relative, uvarint from_step), and back;
// decode throws Error(kStore) naming the record for a damaged one (a cut
// payload, a step no run takes, a from_step past its step, a negative
// or NaN distance).
std::string encode(const Drift& d);
Drift decode(const store::Record& r, const std::string& run_uuid);

}  // namespace trainscope::drift
