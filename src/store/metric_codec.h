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

// Throws Error(kStore) (the store is damaged) when metric `key` is one of
// trainscope's own series (store::is_own_metric) and one of `points` holds
// a value its writer never records (store::own_metric_value_problem:
// exit_code 0 to 255, the sampler's finite and not negative), so that no
// reader shows it as a fact. check_summary applies the same rule.
void check_own(const std::vector<MetricPoint>& points, std::string_view key, std::string_view uuid);

// Throws Error(kStore) (the store is damaged) when the chunks of metric
// `key` of run `uuid` count `chunks` points where the key's row counts
// `row`: every writer adds a batch's chunks and its count in one
// transaction, so a chunk copied or lost shows here, before `metrics`
// lists points that the key's count and every summary leave out.
void check_total(int64_t chunks, int64_t row, std::string_view key, std::string_view uuid);

// Non-negative counts as LEB128 varints (a 64-bin histogram of mostly empty
// bins takes ~70 bytes instead of 512). Throws Error(kStore) on a truncated
// blob.
void encode_counts(const std::vector<int64_t>& counts, std::string& out);
std::vector<int64_t> decode_counts(std::string_view blob);

}  // namespace trainscope::store::codec
