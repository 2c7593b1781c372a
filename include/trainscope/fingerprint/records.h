// The fingerprint capability's records (Store::append_records): the names
// of the tensors a run hashes, and one record per fingerprinted step.
// Torch-free: readers (diff, the dashboard, tune) need no libtorch.
//
// Layouts (docs/store_format.md, "Records"):
//   kind "fingerprint_tensors", key "", step 0: uvarint n, n x bytes name
//   kind "fingerprints", key "", step S: the hashes of step S as uint64
//     little-endian, in the order of the names (8 bytes each)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::fingerprint {

// The name of the hash a run's fingerprints use: xxh3-64 for a model on
// the CPU (tensor_hash; no tag), words-splitmix64 for one on a GPU
// (DeviceHasher; the run's tag fingerprint.hash says so).
inline constexpr const char* kHostHash = "xxh3-64";
inline constexpr const char* kDeviceHash = "words-splitmix64";

// The record kinds (layouts above).
inline constexpr const char* kNamesKind = "fingerprint_tensors";
inline constexpr const char* kStepsKind = "fingerprints";

// Hashes of every tensor of a model (and the loss) after one optimizer step.
struct Fingerprint {
  int64_t step = 0;
  std::vector<uint64_t> hashes;  // one per name in FingerprintSet::names
};

// What read() returns: the names and every recorded step.
struct FingerprintSet {
  std::vector<std::string> names;  // tensor names, in forward order
  std::vector<Fingerprint> steps;  // increasing step
};

// The record of the tensor names (kind kNamesKind, step 0). Pure.
store::Record names_record(const std::vector<std::string>& names);
// The record of one step's hashes (kind kStepsKind, at f.step). Pure.
store::Record step_record(const Fingerprint& f, double wall_time = 0);

// The tensor names a run's fingerprints hash; empty when it has none.
// Throws Error(kStore) for a damaged record.
std::vector<std::string> read_names(store::Store& store, std::string_view uuid);
// The run's names and fingerprints in increasing step order (empty for a
// run without any). Throws Error(kStore) for a damaged record.
FingerprintSet read(store::Store& store, std::string_view uuid);

}  // namespace trainscope::fingerprint
