// Packing of metric points into chunk blobs (see docs/store_format.md).
//
// A chunk is a run of points of one key, stored as consecutive 24-byte
// little-endian records: int64 step, float64 wall_time, float64 value. The
// raw IEEE-754 bits are kept, so NaN payloads and signed infinities survive.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::store::codec {

constexpr size_t kPointBytes = 24;

void encode(const MetricPoint* points, size_t n, std::string& out);
// Appends the points in `blob` to `out`. Throws Error(kStore) if the blob's
// size is not a multiple of kPointBytes.
void decode(std::string_view blob, std::vector<MetricPoint>& out);

// Non-negative counts as LEB128 varints (a 64-bin histogram of mostly empty
// bins takes ~70 bytes instead of 512). Throws Error(kStore) on a truncated
// blob.
void encode_counts(const std::vector<int64_t>& counts, std::string& out);
std::vector<int64_t> decode_counts(std::string_view blob);

}  // namespace trainscope::store::codec
