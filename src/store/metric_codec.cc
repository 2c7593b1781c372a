#include "metric_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/store.h"

namespace trainscope::store::codec {
using core::ErrorKind;
using core::fail;

namespace {
static_assert(std::endian::native == std::endian::little,
              "metric chunks are little-endian; add byte swapping for this target");
}

void encode(const MetricPoint* points, size_t n, std::string& out) {
  size_t base = out.size();
  out.resize(base + n * kPointBytes);
  char* p = out.data() + base;
  for (size_t i = 0; i < n; ++i, p += kPointBytes) {
    std::memcpy(p, &points[i].step, 8);
    std::memcpy(p + 8, &points[i].wall_time, 8);
    std::memcpy(p + 16, &points[i].value, 8);
  }
}

void decode(std::string_view blob, std::vector<MetricPoint>& out) {
  if (blob.size() % kPointBytes != 0)
    fail(ErrorKind::kStore,
         "metric chunk of {} bytes is not a whole number of points; the store is damaged",
         blob.size());
  size_t n = blob.size() / kPointBytes;
  size_t base = out.size();
  out.resize(base + n);
  const char* p = blob.data();
  for (size_t i = 0; i < n; ++i, p += kPointBytes) {
    std::memcpy(&out[base + i].step, p, 8);
    std::memcpy(&out[base + i].wall_time, p + 8, 8);
    std::memcpy(&out[base + i].value, p + 16, 8);
    if (auto why = step_problem(out[base + i].step))
      fail(ErrorKind::kStore, "metric point {} of a chunk: {}; the store is damaged", i, *why);
    // Writers record the time of day (seconds since 1970): NaN, a time
    // before 1970 or past year 9999 is no point's time, and would reach
    // `plot --x time` and a TensorBoard file that no reader takes back.
    if (const double w = out[base + i].wall_time; !is_point_time(w))
      fail(ErrorKind::kStore,
           "metric point {} of a chunk (step {}): its wall time {} is not a time of day (seconds "
           "since 1970); the store is damaged",
           i, out[base + i].step, w);
  }
}

void check_own(const std::vector<MetricPoint>& points, std::string_view key,
               std::string_view uuid) {
  if (!is_own_metric(key)) return;
  for (const MetricPoint& p : points)
    if (auto why = own_metric_value_problem(key, p.value))
      fail(ErrorKind::kStore, "run {}: {} at step {}; the store is damaged", core::short_uuid(uuid),
           *why, p.step);
}

void check_summary(const MetricSummary& m, std::string_view uuid) {
  if (auto why = step_problem(m.last_step))
    fail(ErrorKind::kStore, "metric '{}' of run {}: its last {}; the store is damaged",
         core::escape_for_display(m.key), core::short_uuid(uuid), *why);
  if (m.count < 0 || m.count > (int64_t{1} << 53))  // more points than any store could hold
    fail(ErrorKind::kStore, "metric '{}' of run {}: its count is {}; the store is damaged",
         core::escape_for_display(m.key), core::short_uuid(uuid), m.count);
  // Writers keep min and max over the finite points, and the last point is
  // one of them: both unset (no finite point), or min <= max, and a finite
  // last between them.
  const bool no_min = std::isnan(m.min), no_max = std::isnan(m.max);
  const bool finite_last = std::isfinite(m.last_value);
  if (no_min != no_max || (!no_min && !(m.min <= m.max)) ||
      (finite_last && (no_min || m.last_value < m.min || m.last_value > m.max)))
    fail(ErrorKind::kStore,
         "metric '{}' of run {}: its last {}, min {} and max {} contradict each other; the store "
         "is damaged",
         core::escape_for_display(m.key), core::short_uuid(uuid), m.last_value, m.min, m.max);
  if (m.count > 0 && is_own_metric(m.key))  // check_own, of the summary
    for (const double v : {m.last_value, m.min, m.max})
      if (auto why = own_metric_value_problem(m.key, v))
        fail(ErrorKind::kStore, "run {}: {} in its summary; the store is damaged",
             core::short_uuid(uuid), *why);
}

void check_last(const std::vector<MetricPoint>& points, int64_t last_step, double last_value,
                std::string_view key, std::string_view uuid) {
  if (points.empty()) return;
  const MetricPoint& p = points.back();
  const bool same_value = p.value == last_value || (std::isnan(p.value) && std::isnan(last_value));
  if (p.step == last_step && same_value) return;
  fail(ErrorKind::kStore,
       "metric '{}' of run {}: its chunks end at step {} ({}) where its row records the last "
       "point at step {} ({}); the store is damaged",
       core::escape_for_display(key), core::short_uuid(uuid), p.step, p.value, last_step,
       last_value);
}

void check_count(int64_t counted, size_t decoded, std::string_view key, std::string_view uuid) {
  if (counted == static_cast<int64_t>(decoded)) return;
  fail(ErrorKind::kStore,
       "metric '{}' of run {}: its chunks hold {} points where their rows count {}; the store is "
       "damaged",
       core::escape_for_display(key), core::short_uuid(uuid), decoded, counted);
}

void check_total(int64_t chunks, int64_t row, std::string_view key, std::string_view uuid) {
  if (chunks == row) return;
  fail(ErrorKind::kStore,
       "metric '{}' of run {}: its chunks count {} points where its row counts {}; the store is "
       "damaged",
       core::escape_for_display(key), core::short_uuid(uuid), chunks, row);
}

void encode_counts(const std::vector<int64_t>& counts, std::string& out) {
  for (int64_t c : counts) {
    auto v = static_cast<uint64_t>(std::max<int64_t>(c, 0));
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      out.push_back(static_cast<char>(byte | (v ? 0x80 : 0)));
    } while (v);
  }
}

std::vector<int64_t> decode_counts(std::string_view blob) {
  std::vector<int64_t> out;
  uint64_t v = 0;
  int shift = 0;
  for (char ch : blob) {
    auto byte = static_cast<uint8_t>(ch);
    if (shift > 63) core::fail(core::ErrorKind::kStore, "histogram counts: varint too long");
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    shift += 7;
    if (!(byte & 0x80)) {
      out.push_back(static_cast<int64_t>(v));
      v = 0;
      shift = 0;
    }
  }
  if (shift) core::fail(core::ErrorKind::kStore, "histogram counts: truncated varint");
  return out;
}

}  // namespace trainscope::store::codec
