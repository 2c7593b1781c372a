// Downsampling a series to what a chart can show: Largest-Triangle-Three-
// Buckets (Steinarsson 2013), which keeps the points that shape the curve
// (peaks, drops) where plain striding would skip them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace trainscope::serve {

// The indices (increasing) of at most `threshold` points of (x[i], y[i]),
// i < n, chosen by LTTB: always the first and the last; every point when
// n <= threshold or threshold < 3. x must be non-decreasing; y finite.
std::vector<size_t> lttb(const double* x, const double* y, size_t n, size_t threshold);

// lttb() over a series handed over a point at a time, in order, holding
// about two of its buckets (n / threshold points each) rather than all n
// points: once the n points are added, kept() holds the ones lttb() keeps
// of them (the same points, chosen by the same arithmetic), each as the
// value added with it. n is known first (counted by a pass before). When
// lttb() keeps every point (n <= threshold, threshold < 3), so does this.
// Not thread-safe.
template <class T>
class LttbStream {
 public:
  // A series of `n` points drawn with at most `threshold`.
  LttbStream(size_t n, size_t threshold)
      : n_(n),
        all_(n <= threshold || threshold < 3),
        buckets_(all_ ? 0 : threshold - 2),
        every_(all_ ? 0.0 : static_cast<double>(n - 2) / static_cast<double>(threshold - 2)) {}

  // The next point: x not less than the one before, y finite. Points past
  // the n-th are ignored.
  void add(double x, double y, T value) {
    if (added_ >= n_) return;
    const size_t i = added_++;
    if (all_ || i == 0) {
      kept_x_ = x;
      kept_y_ = y;
      kept_.push_back(std::move(value));
      return;
    }
    buf_.push_back({x, y, std::move(value)});
    while (bucket_ < buckets_ && added_ >= needed(bucket_)) choose(bucket_++);
    if (added_ == n_) kept_.push_back(std::move(buf_.back().value));  // the last point
  }

  // What lttb() keeps of the points added, in their order.
  std::vector<T>& kept() { return kept_; }

 private:
  struct Item {
    double x = 0, y = 0;
    T value;
  };

  // Where bucket b starts (lttb()'s lo of b, its hi of b - 1).
  size_t edge(size_t b) const { return 1 + static_cast<size_t>(std::floor(b * every_)); }
  // How many points must be in before bucket b is chosen: through the next
  // bucket, whose mean it takes (all n when that one is empty: lttb() then
  // takes the last point).
  size_t needed(size_t b) const {
    const size_t hi = edge(b + 1), next_hi = std::min(n_, edge(b + 2));
    return next_hi > hi ? next_hi : n_;
  }
  Item& at(size_t i) { return buf_[i - base_]; }

  // Keeps the point of bucket b that lttb() keeps, then lets the bucket go.
  void choose(size_t b) {
    const size_t lo = edge(b), hi = edge(b + 1), next_hi = std::min(n_, edge(b + 2));
    double mx = 0, my = 0;
    for (size_t i = hi; i < next_hi; ++i) mx += at(i).x, my += at(i).y;
    const double count = static_cast<double>(next_hi > hi ? next_hi - hi : 0);
    if (count > 0) {
      mx /= count;
      my /= count;
    } else {
      mx = at(n_ - 1).x, my = at(n_ - 1).y;
    }
    double best = -1;
    size_t best_i = lo;
    for (size_t i = lo; i < hi; ++i) {
      const double area =
          std::abs((kept_x_ - mx) * (at(i).y - kept_y_) - (kept_x_ - at(i).x) * (my - kept_y_));
      if (area > best) best = area, best_i = i;
    }
    kept_x_ = at(best_i).x;
    kept_y_ = at(best_i).y;
    kept_.push_back(std::move(at(best_i).value));
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(hi - base_));
    base_ = hi;
  }

  size_t n_;
  bool all_;
  size_t buckets_;
  double every_;
  size_t added_ = 0, bucket_ = 0;
  size_t base_ = 1;  // the index of buf_'s first point
  std::vector<Item> buf_;
  double kept_x_ = 0, kept_y_ = 0;  // the point kept last
  std::vector<T> kept_;
};

}  // namespace trainscope::serve
