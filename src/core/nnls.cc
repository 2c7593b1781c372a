#include "trainscope/core/nnls.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainscope::core {

std::vector<double> least_squares(const std::vector<std::vector<double>>& a,
                                  const std::vector<double>& b,
                                  const std::vector<size_t>& columns) {
  const size_t k = columns.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (size_t r = 0; r < a.size(); ++r)
    for (size_t i = 0; i < k; ++i) {
      const double xi = a[r][columns[i]];
      for (size_t j = 0; j < k; ++j) m[i][j] += xi * a[r][columns[j]];
      m[i][k] += xi * b[r];
    }
  for (size_t i = 0; i < k; ++i) m[i][i] += 1e-12 * (1 + m[i][i]);
  for (size_t c = 0; c < k; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[p][c])) p = r;
    std::swap(m[c], m[p]);
    if (std::fabs(m[c][c]) < 1e-300) continue;
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (size_t j = c; j <= k; ++j) m[r][j] -= f * m[c][j];
    }
  }
  std::vector<double> z(k, 0.0);
  for (size_t i = 0; i < k; ++i) z[i] = std::fabs(m[i][i]) < 1e-300 ? 0.0 : m[i][k] / m[i][i];
  return z;
}

namespace {

std::vector<double> nnls_scaled(const std::vector<std::vector<double>>& a,
                                const std::vector<double>& b, int max_iterations) {
  const size_t n = a.empty() ? 0 : a[0].size();
  std::vector<double> x(n, 0.0);
  if (n == 0) return x;
  std::vector<bool> passive(n, false);
  auto gradient = [&] {  // w = A^T (b - A x)
    std::vector<double> w(n, 0.0);
    for (size_t r = 0; r < a.size(); ++r) {
      double res = b[r];
      for (size_t j = 0; j < n; ++j) res -= a[r][j] * x[j];
      for (size_t j = 0; j < n; ++j) w[j] += a[r][j] * res;
    }
    return w;
  };
  const int limit = max_iterations > 0 ? max_iterations : static_cast<int>(3 * n + 10);
  for (int it = 0; it < limit; ++it) {
    auto w = gradient();
    double wmax = 0, scale = 0;
    size_t j = n;
    for (size_t i = 0; i < n; ++i) {
      scale = std::max(scale, std::fabs(w[i]));
      if (!passive[i] && w[i] > wmax) wmax = w[i], j = i;
    }
    if (j == n || wmax <= 1e-12 * std::max(1.0, scale)) break;
    passive[j] = true;
    for (int inner = 0; inner < static_cast<int>(n) + 1; ++inner) {
      std::vector<size_t> cols;
      for (size_t i = 0; i < n; ++i)
        if (passive[i]) cols.push_back(i);
      auto zc = least_squares(a, b, cols);
      std::vector<double> z(n, 0.0);
      bool feasible = true;
      for (size_t i = 0; i < cols.size(); ++i) {
        z[cols[i]] = zc[i];
        if (zc[i] <= 0) feasible = false;
      }
      if (feasible) {
        x = z;
        break;
      }
      // Step from x toward z until the first passive coefficient hits zero.
      double alpha = std::numeric_limits<double>::infinity();
      for (size_t i : cols)
        if (z[i] <= 0) alpha = std::min(alpha, x[i] / (x[i] - z[i]));
      if (!std::isfinite(alpha)) alpha = 0;
      for (size_t i = 0; i < n; ++i) {
        x[i] += alpha * (z[i] - x[i]);
        if (passive[i] && x[i] <= 1e-15 * std::max(1.0, std::fabs(z[i])))
          passive[i] = false, x[i] = 0;
      }
    }
  }
  return x;
}

}  // namespace

std::vector<double> nnls(const std::vector<std::vector<double>>& a, const std::vector<double>& b,
                         int max_iterations) {
  // Columns scaled to unit norm: features in different units (MFLOP next to
  // Mparams of a BatchNorm, ~1e-4) otherwise square into normal equations
  // too ill-conditioned to solve. x >= 0 is unchanged by a positive scale.
  const size_t n = a.empty() ? 0 : a[0].size();
  std::vector<double> norm(n, 0.0);
  for (const auto& row : a)
    for (size_t j = 0; j < n; ++j) norm[j] += row[j] * row[j];
  for (auto& v : norm) v = v > 0 ? std::sqrt(v) : 1.0;
  auto scaled = a;
  for (auto& row : scaled)
    for (size_t j = 0; j < n; ++j) row[j] /= norm[j];
  auto x = nnls_scaled(scaled, b, max_iterations);
  for (size_t j = 0; j < n; ++j) x[j] /= norm[j];
  return x;
}

}  // namespace trainscope::core
