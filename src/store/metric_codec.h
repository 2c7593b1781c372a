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
// Appends the points in `blob` to `out`. Throws Error(kStore) (the store is
// damaged) if the blob's size is not a multiple of kPointBytes, or a point's
// step breaks the rule every writer keeps (store::step_problem): a reader
// never shows or exports step -5.
void decode(std::string_view blob, std::vector<MetricPoint>& out);

// A metric's summary as read back from run `uuid`'s keys: Throws
// Error(kStore) (the store is damaged) when its last step breaks the step
// rule, as decode does for a point, or its count is negative.
// So does a min above its max, or a finite last value outside them.
void check_summary(const MetricSummary& m, std::string_view uuid);

// Throws Error(kStore) (the store is damaged) when the last of `points`,
// metric `key`'s whole series read in chunk order, is not the last point
// its row records: every writer appends a key's chunks in order and sets
// the row's last to the last point it appends, so chunks whose order was
// changed show here, before two readers disagree about the last value.
void check_last(const std::vector<MetricPoint>& points, int64_t last_step, double last_value,
                std::string_view key, std::string_view uuid);

// Throws Error(kStore) (the store is damaged) when the chunks of metric
// `key` of run `uuid` decoded to `decoded` points where their rows count
// `counted`.
void check_count(int64_t counted, size_t decoded, std::string_view key, std::string_view uuid);

// Non-negative counts as LEB128 varints (a 64-bin histogram of mostly empty
// bins takes ~70 bytes instead of 512). Throws Error(kStore) on a truncated
// blob.
void encode_counts(const std::vector<int64_t>& counts, std::string& out);
std::vector<int64_t> decode_counts(std::string_view blob);

}  // namespace trainscope::store::codec
