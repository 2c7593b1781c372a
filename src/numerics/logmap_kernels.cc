#include "logmap_kernels.h"

#include <cmath>

namespace trainscope::numerics::kernels {
namespace {

// One step in type T. With fma, the expression's a*b+c parts use std::fma:
//   (r*x)*(1-x)  has none;  r*(x*(1-x)) -> r*fma(-x, x, x);
//   r*x - r*x*x  -> t = r*x; fma(-t, x, t).
template <typename T>
inline T step(T x, T r, Order order, bool fma) {
  switch (order) {
    case Order::kRxTimesOneMinusX:
      return (r * x) * (T(1) - x);
    case Order::kRTimesXOneMinusX:
      if (fma) return r * std::fma(-x, x, x);
      return r * (x * (T(1) - x));
    case Order::kRxMinusRxx: {
      T t = r * x;
      if (fma) return std::fma(-t, x, t);
      return t - t * x;
    }
  }
  return x;
}

template <typename T>
Trajectory run(T x, T r, Order order, bool fma, int64_t steps) {
  Trajectory out;
  out.reserve(static_cast<size_t>(steps) + 1);
  out.push_back(static_cast<__float128>(x));
  for (int64_t n = 0; n < steps; ++n) {
    x = step(x, r, order, fma);
    out.push_back(static_cast<__float128>(x));
  }
  return out;
}

}  // namespace

Trajectory iterate_f32(float x0, float r, Order order, bool fma, int64_t steps) {
  return run<float>(x0, r, order, fma, steps);
}

Trajectory iterate_f32_wide(float x0, float r, Order order, bool fma, int64_t steps) {
  Trajectory out;
  out.reserve(static_cast<size_t>(steps) + 1);
  float x = x0;
  out.push_back(static_cast<__float128>(x));
  for (int64_t n = 0; n < steps; ++n) {
    x = static_cast<float>(step<double>(x, r, order, fma));  // round once, on store
    out.push_back(static_cast<__float128>(x));
  }
  return out;
}

Trajectory iterate_f64(double x0, double r, Order order, bool fma, int64_t steps) {
  return run<double>(x0, r, order, fma, steps);
}

Trajectory iterate_f80(long double x0, long double r, Order order, int64_t steps) {
  return run<long double>(x0, r, order, false, steps);
}

Trajectory iterate_f128(__float128 x0, __float128 r, Order order, int64_t steps) {
  Trajectory out;
  out.reserve(static_cast<size_t>(steps) + 1);
  __float128 x = x0;
  out.push_back(static_cast<__float128>(x));
  for (int64_t n = 0; n < steps; ++n) {
    switch (order) {
      case Order::kRxTimesOneMinusX:
        x = (r * x) * (1 - x);
        break;
      case Order::kRTimesXOneMinusX:
        x = r * (x * (1 - x));
        break;
      case Order::kRxMinusRxx: {
        __float128 t = r * x;
        x = t - t * x;
        break;
      }
    }
    out.push_back(static_cast<__float128>(x));
  }
  return out;
}

}  // namespace trainscope::numerics::kernels
