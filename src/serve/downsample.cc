#include "trainscope/serve/downsample.h"

#include <cmath>

namespace trainscope::serve {

std::vector<size_t> lttb(const double* x, const double* y, size_t n, size_t threshold) {
  std::vector<size_t> out;
  if (n <= threshold || threshold < 3) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  out.reserve(threshold);
  out.push_back(0);
  // The points between the first and the last fall into threshold - 2
  // buckets; from each, the point making the largest triangle with the point
  // kept from the previous bucket and the mean of the next bucket is kept.
  const double every = static_cast<double>(n - 2) / static_cast<double>(threshold - 2);
  size_t kept = 0;
  for (size_t b = 0; b < threshold - 2; ++b) {
    const size_t lo = 1 + static_cast<size_t>(std::floor(b * every));
    const size_t hi = 1 + static_cast<size_t>(std::floor((b + 1) * every));
    const size_t next_lo = hi;
    const size_t next_hi = std::min(n, 1 + static_cast<size_t>(std::floor((b + 2) * every)));
    double mx = 0, my = 0;
    for (size_t i = next_lo; i < next_hi; ++i) mx += x[i], my += y[i];
    const double count = static_cast<double>(next_hi - next_lo);
    if (count > 0) {
      mx /= count;
      my /= count;
    } else {
      mx = x[n - 1], my = y[n - 1];
    }
    double best = -1;
    size_t best_i = lo;
    for (size_t i = lo; i < hi; ++i) {
      const double area =
          std::abs((x[kept] - mx) * (y[i] - y[kept]) - (x[kept] - x[i]) * (my - y[kept]));
      if (area > best) best = area, best_i = i;
    }
    out.push_back(best_i);
    kept = best_i;
  }
  out.push_back(n - 1);
  return out;
}

}  // namespace trainscope::serve
