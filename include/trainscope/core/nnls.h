// Non-negative least squares: minimise ||A x - b||_2 subject to x >= 0.
//
// Lawson and Hanson's active-set algorithm (Solving Least Squares Problems,
// 1974, ch. 23). The cost model uses it because every term of a layer's
// time (per FLOP, per byte, per call) is a cost: a negative coefficient fits
// the training architectures better and predicts a new one worse.
#pragma once

#include <cstddef>
#include <vector>

namespace trainscope::core {

// `a` is row-major, rows.size() x cols; returns x (cols entries, all >= 0).
// Columns that are all zero get coefficient 0.
std::vector<double> nnls(const std::vector<std::vector<double>>& a, const std::vector<double>& b,
                         int max_iterations = 0);

// Unconstrained least squares on the given columns (normal equations with a
// tiny ridge, Gauss-Jordan with partial pivoting); used by nnls.
std::vector<double> least_squares(const std::vector<std::vector<double>>& a,
                                  const std::vector<double>& b,
                                  const std::vector<std::size_t>& columns);

}  // namespace trainscope::core
