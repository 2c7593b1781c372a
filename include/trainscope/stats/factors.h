// How much of a result's variance comes from which factor of a grid of runs
// (optimizer x seed, data order x initialisation x ...): variance components
// of two or more crossed factors, each random or fixed (a mixed model).
//
// The model, for factors F1..Fk and a run r in cell (i1, ..., ik):
//   y_r = mu + sum_f F_f[i_f] + sum_{f<g} FG[i_f, i_g] + e_r
// A term (a factor, or the interaction of two) is fixed when all its factors
// are fixed, random otherwise: a random term's levels are independent
// N(0, s2_term), e ~ N(0, s2_residual) (the unrestricted mixed model, as
// lme4's y ~ fixed + (1|F) + (1|F:G) fits it). The two-factor interactions
// are in the model when some cell of all k factors holds two or more runs
// (Interactions::kAuto), or when asked (kPairs); a three-factor interaction
// is never in it (it is pooled into the residual).
//
// Estimators:
// - Balanced data (every cell of the k factors present, each with the same
//   number of runs): the ANOVA table (sums of squares, df, mean squares, F
//   and p per term) and the expected-mean-square (method of moments)
//   estimators: E[MS_T] = s2_residual + sum over the random terms U that
//   contain T of (N / cells of U) s2_U. Interval: Satterthwaite's
//   (the estimate as a linear combination of mean squares, with its
//   effective df, in a chi-square interval); exact for the residual. F of a
//   term uses the mean square whose expectation equals the term's under the
//   null (the interaction's for a main effect with a random interaction);
//   unset when no such mean square exists (three factors with all their
//   interactions). The reported estimate is truncated at 0.
// - Any data, balanced or not: REML, with dense matrices (V = sum_k s2_k Z_k
//   Z_k' + s2_residual I; a study has at most a few hundred runs), fitted by
//   Newton's method (Fisher scoring where the Hessian is not negative
//   definite) on the log of the components, with a line search, to a step
//   below 1e-12; a component that goes to 0 leaves the fit and comes back
//   only if the REML score at 0 is positive. Interval: the asymptotic
//   (Wald) interval on the log scale, s2 exp(-+ z se(log s2)), se from the
//   inverse expected information; none for a component at 0. On balanced
//   data whose ANOVA estimates are all positive REML equals ANOVA.
// The reported components (`variance`) are ANOVA's on balanced data, REML's
// otherwise; `share` is each random term's fraction of their sum.
//
// Torch-free. What the data cannot answer (one factor, a factor with one
// level, NaN, no residual degrees of freedom, every value equal) throws
// core::Error(kUsage) with one line. tests/stats checks the numbers against
// statsmodels and R's lme4.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/stats/runs.h"
#include "trainscope/stats/stats.h"

namespace trainscope::stats {

// One run: its level of each factor (in FactorData::factors order) and its
// result.
struct FactorRow {
  std::vector<std::string> levels;
  double value = 0;
};

// What analyse_factors takes: factor names, which are fixed, and one row
// per run.
struct FactorData {
  std::vector<std::string> factors;  // names, two or more
  std::vector<bool> fixed;           // per factor; empty: every factor random
  std::vector<FactorRow> rows;
};

// Which interaction terms the model has.
enum class Interactions {
  kAuto,   // the two-factor interactions when a cell holds replicates
  kNone,   // main effects only
  kPairs,  // every two-factor interaction (needs replicates, or 3+ factors)
};

// How analyse_factors fits.
struct FactorOptions {
  Interactions interactions = Interactions::kAuto;
  double confidence = 0.95;
  // Fit REML too. Without it unbalanced data throw. Past kMaxRemlRuns runs
  // (dense matrices: O(n^3) per iteration) REML is left out of balanced
  // data (a note says so) and unbalanced data throw.
  bool reml = true;
};
// The most runs REML is fitted to (see FactorOptions::reml).
inline constexpr int kMaxRemlRuns = 2000;

// A term's line of the ANOVA table (balanced data).
struct AnovaLine {
  double ss = 0, df = 0, ms = 0;
  std::optional<double> f, p_value;  // F against `f_denominator`'s mean square
  std::string f_denominator;         // a term's name, or "residual"
};

// One term of the model: its ANOVA line and variance component, by both
// methods where they apply.
struct FactorTerm {
  std::string name;          // "optimizer", "optimizer:seed", "residual"
  std::vector<int> factors;  // indices into the factors; empty: residual
  bool fixed = false;
  int levels = 0;                  // cells of the term in the data (runs, for the residual)
  std::optional<AnovaLine> anova;  // balanced data
  // Variance components: random terms and the residual.
  std::optional<double> anova_estimate;  // raw EMS estimate, may be < 0
  std::optional<Interval> anova_ci;      // Satterthwaite; unset when <= 0
  std::optional<double> reml_estimate;
  std::optional<Interval> reml_ci;  // Wald on log scale; unset at 0
  double variance = 0;              // the reported component (see above)
  double share = 0;                 // variance / sum of the random variances
};

// What analyse_factors returns: a plain value.
struct FactorAnalysis {
  std::vector<std::string> factors;
  std::vector<bool> fixed;
  int n = 0;
  bool balanced = false;
  int replicates = 0;              // runs per cell when balanced
  std::string method;              // of `variance`: "ANOVA" (balanced) or "REML"
  std::vector<FactorTerm> terms;   // main effects, interactions, residual last
  double reml_log_likelihood = 0;  // with the constant, as lme4's logLik
  int reml_iterations = 0;
  int fixed_parameters = 0;  // columns of the fixed-effects design (rank)
  double confidence = 0.95;
  std::vector<std::string> notes;
};

// Throws for fewer than 2 factors, a factor with fewer than 2 levels, a row
// with the wrong number of levels, a value that is not finite, every value
// equal, or no degrees of freedom left for the residual.
FactorAnalysis analyse_factors(const FactorData& data, const FactorOptions& options = {});

// The runs of `selection` (its `by` ignored) as rows of the factors `by`,
// each named as Selection::by names a grouping (a param, tags.KEY, a run
// attribute). All factors random. A run whose value is not finite is left
// out with a note (finite_values).
FactorData collect_factors(store::Store& store, const Selection& selection,
                           const std::vector<std::string>& by, std::vector<std::string>& notes);

}  // namespace trainscope::stats
