// Helpers shared by the statistics' translation units.
#pragma once

#include <string>
#include <vector>

#include "trainscope/stats/stats.h"

namespace trainscope::stats {

// Throw a one-line usage error for an empty sample or one holding NaN/Inf.
void require_finite(Sample x, const std::string& what);
// ... or one with no more than `ddof` values.
void require_spread(Sample x, int ddof, const std::string& what);
double sum_squares(Sample x, double mean);
double t_quantile(double df, double p);
// Throws unless there are >= 2 groups, each non-empty and finite.
void require_groups(const std::vector<std::vector<double>>& groups, size_t min_size = 1);

// The sample sorted, after the checks of the Shapiro-Wilk test (3 to 5000
// finite values, not all equal).
std::vector<double> shapiro_checked_sorted(Sample x);

// Sums of squares of a one-way layout.
struct OneWay {
  int k = 0;
  int n = 0;
  double grand_mean = 0;
  double ss_between = 0;
  double ss_within = 0;
};
OneWay one_way(const std::vector<std::vector<double>>& groups);

}  // namespace trainscope::stats
