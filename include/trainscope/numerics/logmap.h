// The logistic map x(n+1) = r * x(n) * (1 - x(n)) in several floating-point
// formats, to show how precision changes a chaotic computation (BRIEF §1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainscope::numerics {

struct LogmapOptions {
  double x0 = 0.4;
  double r = 3.7;
  int64_t steps = 2000;
};

struct LogmapTrajectory {
  std::string variant;           // "float32", "float64", "long_double"
  std::vector<double> x;         // x[0] = x0 ... x[steps], widened to double
};

// Checks the options; throws Error explaining the valid ranges otherwise.
void validate(const LogmapOptions& options);

// Computes the map as (r * x) * (1 - x) with no FMA contraction in float,
// double and long double.
std::vector<LogmapTrajectory> logmap_basic(const LogmapOptions& options);

// First step n at which |a[n] - b[n]| > tol, or -1.
int64_t first_divergence(const std::vector<double>& a, const std::vector<double>& b, double tol);

}  // namespace trainscope::numerics
