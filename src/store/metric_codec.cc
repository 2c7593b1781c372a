#include "metric_codec.h"

#include <bit>
#include <cstring>

#include "trainscope/core/error.h"

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
  }
}

}  // namespace trainscope::store::codec
