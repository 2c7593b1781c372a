// Built with -ffp-contract=off (see CMakeLists.txt): every multiply and
// subtract rounds to its format exactly as written.
#include "trainscope/numerics/logmap.h"

#include <cmath>

#include "trainscope/core/error.h"

namespace trainscope::numerics {
namespace {
constexpr int64_t kMaxSteps = 100'000'000;

template <typename T>
std::vector<double> iterate(T x0, T r, int64_t steps) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(steps) + 1);
  T x = x0;
  out.push_back(static_cast<double>(x));
  for (int64_t n = 0; n < steps; ++n) {
    x = (r * x) * (T(1) - x);
    out.push_back(static_cast<double>(x));
  }
  return out;
}
}  // namespace

void validate(const LogmapOptions& o) {
  if (!(o.r > 0 && o.r <= 4))
    fail(ErrorKind::kUsage,
         "--r {} is outside (0, 4]: for r > 4 the map sends x out of [0, 1] and it diverges", o.r);
  if (!(o.x0 >= 0 && o.x0 <= 1))
    fail(ErrorKind::kUsage, "--x0 {} is outside [0, 1]: the map only stays bounded on [0, 1]",
         o.x0);
  if (o.steps <= 0) fail(ErrorKind::kUsage, "--steps must be positive (got {})", o.steps);
  if (o.steps > kMaxSteps)
    fail(ErrorKind::kUsage, "--steps {} is too large; the limit is {}", o.steps, kMaxSteps);
}

std::vector<LogmapTrajectory> logmap_basic(const LogmapOptions& o) {
  validate(o);
  return {
      {"float32", iterate<float>(static_cast<float>(o.x0), static_cast<float>(o.r), o.steps)},
      {"float64", iterate<double>(o.x0, o.r, o.steps)},
      {"long_double", iterate<long double>(static_cast<long double>(o.x0),
                                           static_cast<long double>(o.r), o.steps)},
  };
}

int64_t first_divergence(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol)) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace trainscope::numerics
