// Downsampling a series to what a chart can show: Largest-Triangle-Three-
// Buckets (Steinarsson 2013), which keeps the points that shape the curve
// (peaks, drops) where plain striding would skip them.
#pragma once

#include <cstddef>
#include <vector>

namespace trainscope::serve {

// The indices (increasing) of at most `threshold` points of (x[i], y[i]),
// i < n, chosen by LTTB: always the first and the last; every point when
// n <= threshold or threshold < 3. x must be non-decreasing; y finite.
std::vector<size_t> lttb(const double* x, const double* y, size_t n, size_t threshold);

}  // namespace trainscope::serve
