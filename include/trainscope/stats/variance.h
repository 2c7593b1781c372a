// How much of a result's variance comes from which source.
//
// For a grid of cells (a factor level, a randomness source, a seed) each
// holding replicate runs, the one-way random-effects model
//   y_ij = mu + a_i + e_ij,  a_i ~ N(0, s2_between),  e_ij ~ N(0, s2_within)
// is fitted by the method of moments (ANOVA estimators, unbalanced cells
// through n0). Torch-free; distributions from Boost.Math.
#pragma once

#include <vector>

#include "trainscope/stats/stats.h"

namespace trainscope::stats {

// What variance_components returns: the one-way ANOVA, the estimates and
// their intervals. A plain value.
struct VarianceComponents {
  int k = 0;        // cells
  int n_total = 0;  // runs
  double n0 = 0;    // effective runs per cell: (N - sum n_i^2 / N) / (k - 1)
  double ms_between = 0, ms_within = 0;
  double df_between = 0, df_within = 0;
  double f = 0, p_value = 1;  // F test of s2_between = 0
  // Estimates; s2_between is truncated at 0 (the raw (MSB - MSW) / n0 can be
  // negative: then the cells differ less than chance would make them).
  double s2_between = 0, s2_within = 0;
  double s2_between_raw = 0;
  Interval s2_between_ci;  // modified large-sample interval (Graybill-Wang)
  Interval s2_within_ci;   // exact chi-square interval
  double icc = 0;          // s2_between / (s2_between + s2_within)
  double confidence = 0.95;
};

// Throws when there are fewer than 2 cells, a cell with no runs, fewer runs
// than cells + 1, or when every value is the same.
VarianceComponents variance_components(const std::vector<std::vector<double>>& cells,
                                       double confidence = 0.95);

}  // namespace trainscope::stats
