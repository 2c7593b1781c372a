// Test predictions of a run, stored as an artifact so that measures across
// runs (disagreement, logit correlation, ensembles) need no re-evaluation.
//
// File "predictions/test.bin" (kind "predictions"), little-endian:
//   "TSPRED01" | uint64 n | int32 label[n] | int32 predicted[n] | float32 top_logit[n]
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace trainscope::predictions {

// The artifact's name and kind in a run.
inline constexpr const char* kPredictionsArtifact = "predictions/test.bin";
inline constexpr const char* kPredictionsKind = "predictions";

// Per test example, in the split's order: the true class, the predicted
// class and its logit (the three vectors have one length).
struct Predictions {
  std::vector<int32_t> labels, predicted;
  std::vector<float> top_logit;
  // The fraction of examples predicted right; 0 when there are none.
  double accuracy() const;
};

// Writes the file's bytes (layout above) to `out`; throws
// Error(kRuntime) when `out` fails.
void write_predictions(std::ostream& out, const Predictions& p);
// Throws core::Error naming the file when it is not a predictions file.
Predictions read_predictions(const std::filesystem::path& file);

}  // namespace trainscope::predictions
