// Variance components of crossed factors: the ANOVA (expected mean squares)
// estimators on balanced data, REML on any data.
#include "trainscope/stats/factors.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "trainscope/core/error.h"

namespace trainscope::stats {

using core::ErrorKind;
using core::fail;
namespace bm = boost::math;

namespace {

// Row-major dense matrices, small enough (a few hundred runs) for O(n^3).
using Matrix = std::vector<double>;

// A main effect or a two-factor interaction, its levels coded 0..levels-1.
struct Term {
  std::string name;
  std::vector<int> factors;
  bool fixed = false;
  std::vector<int> code;  // per row
  int levels = 0;
};

struct Design {
  int n = 0;
  std::vector<double> y;
  std::vector<std::vector<int>> codes;  // per factor, per row
  std::vector<int> levels;              // per factor
  std::vector<Term> terms;
  bool balanced = false;
  int replicates = 0;
};

// ---- the data -----------------------------------------------------------------

void validate(const FactorData& d) {
  if (d.factors.size() < 2)
    fail(ErrorKind::kUsage,
         "{} factor(s): give two or more (one factor is a one-way layout, see variance.h)",
         d.factors.size());
  std::set<std::string> names;
  for (const auto& f : d.factors)
    if (f.empty() || !names.insert(f).second)
      fail(ErrorKind::kUsage, "factor name '{}' is empty or given twice: name each factor once", f);
  if (!d.fixed.empty() && d.fixed.size() != d.factors.size())
    fail(ErrorKind::kUsage, "{} fixed flags for {} factors: give one per factor or none",
         d.fixed.size(), d.factors.size());
  if (d.rows.empty()) fail(ErrorKind::kUsage, "no runs: give at least one row");
  for (size_t r = 0; r < d.rows.size(); ++r) {
    if (d.rows[r].levels.size() != d.factors.size())
      fail(ErrorKind::kUsage, "row {} has {} levels for {} factors: give one level per factor",
           r + 1, d.rows[r].levels.size(), d.factors.size());
    if (!std::isfinite(d.rows[r].value))
      fail(ErrorKind::kUsage, "row {} holds {}: drop the runs whose value is not finite", r + 1,
           d.rows[r].value);
  }
}

// Codes 0..L-1 in the levels' sorted order (the first is the reference
// level of a fixed factor, as in R's treatment contrasts).
std::vector<int> recode(const std::vector<std::string>& labels, int& levels) {
  std::map<std::string, int> order;
  for (const auto& l : labels) order.emplace(l, 0);
  int i = 0;
  for (auto& [label, code] : order) code = i++;
  levels = i;
  std::vector<int> out;
  for (const auto& l : labels) out.push_back(order.at(l));
  return out;
}

// Cells of a combination of factors, coded 0..cells-1 in order of
// appearance; returns the code per row.
std::vector<int> cells_of(const Design& d, const std::vector<int>& factors, int& cells) {
  std::map<std::vector<int>, int> seen;
  std::vector<int> code(d.n);
  for (int i = 0; i < d.n; ++i) {
    std::vector<int> key;
    for (int f : factors) key.push_back(d.codes[f][i]);
    code[i] = seen.emplace(key, static_cast<int>(seen.size())).first->second;
  }
  cells = static_cast<int>(seen.size());
  return code;
}

void find_balance(Design& d, int k, int& full_cells, bool& replicated) {
  std::vector<int> all(k);
  std::iota(all.begin(), all.end(), 0);
  std::vector<int> cell = cells_of(d, all, full_cells);
  std::vector<int> count(full_cells, 0);
  for (int c : cell) ++count[c];
  double grid = 1;
  for (int l : d.levels) grid *= l;
  replicated = *std::max_element(count.begin(), count.end()) >= 2;
  d.balanced = grid == full_cells &&
               std::all_of(count.begin(), count.end(), [&](int c) { return c == count[0]; });
  d.replicates = d.balanced ? count[0] : 0;
}

void add_term(Design& d, const FactorData& data, std::vector<int> factors) {
  Term t;
  for (int f : factors) {
    t.name += (t.name.empty() ? "" : ":") + data.factors[f];
    t.fixed = !data.fixed.empty() && data.fixed[f];
  }
  if (factors.size() == 2)
    t.fixed = !data.fixed.empty() && data.fixed[factors[0]] && data.fixed[factors[1]];
  t.factors = std::move(factors);
  t.code = cells_of(d, t.factors, t.levels);
  d.terms.push_back(std::move(t));
}

Design encode(const FactorData& data, const FactorOptions& options) {
  validate(data);
  Design d;
  int k = static_cast<int>(data.factors.size());
  d.n = static_cast<int>(data.rows.size());
  for (const auto& r : data.rows) d.y.push_back(r.value);
  for (int f = 0; f < k; ++f) {
    std::vector<std::string> labels;
    for (const auto& r : data.rows) labels.push_back(r.levels[f]);
    d.codes.push_back(recode(labels, d.levels.emplace_back()));
    if (d.levels[f] < 2)
      fail(ErrorKind::kUsage, "factor '{}' has {} level(s): a factor needs at least 2",
           data.factors[f], d.levels[f]);
  }
  int full_cells = 0;
  bool replicated = false;
  find_balance(d, k, full_cells, replicated);
  bool pairs = options.interactions == Interactions::kPairs ||
               (options.interactions == Interactions::kAuto && replicated);
  if (pairs && k == 2 && !replicated)
    fail(ErrorKind::kUsage,
         "no cell of {} x {} holds two runs: the interaction cannot be told from the residual; "
         "repeat some cells or leave the interaction out",
         data.factors[0], data.factors[1]);
  for (int f = 0; f < k; ++f) add_term(d, data, {f});
  if (pairs)
    for (int f = 0; f < k; ++f)
      for (int g = f + 1; g < k; ++g) add_term(d, data, {f, g});
  auto [lo, hi] = std::minmax_element(d.y.begin(), d.y.end());
  if (*lo == *hi) fail(ErrorKind::kUsage, "every run gave {}: there is no variance to divide", *lo);
  return d;
}

// ---- ANOVA on balanced data ------------------------------------------------------

std::vector<double> cell_means(const std::vector<double>& y, const Term& t) {
  std::vector<double> sum(t.levels, 0), count(t.levels, 0);
  for (size_t i = 0; i < y.size(); ++i) {
    sum[t.code[i]] += y[i];
    ++count[t.code[i]];
  }
  for (int c = 0; c < t.levels; ++c) sum[c] /= count[c];
  return sum;
}

// Sums of squares and df of each term and of the residual (last), from the
// orthogonal effects: m_A - m for a main effect, m_AB - m_A - m_B + m for an
// interaction.
void sums_of_squares(const Design& d, std::vector<AnovaLine>& lines) {
  double g = std::accumulate(d.y.begin(), d.y.end(), 0.0) / d.n;
  std::vector<std::vector<double>> means;
  std::vector<int> main_of(d.levels.size(), -1);
  for (size_t t = 0; t < d.terms.size(); ++t) {
    means.push_back(cell_means(d.y, d.terms[t]));
    if (d.terms[t].factors.size() == 1) main_of[d.terms[t].factors[0]] = static_cast<int>(t);
  }
  std::vector<double> residual(d.y);
  lines.assign(d.terms.size() + 1, {});
  double df_left = d.n - 1;
  for (size_t t = 0; t < d.terms.size(); ++t) {
    const Term& term = d.terms[t];
    double df = 1;
    for (int f : term.factors) df *= d.levels[f] - 1;
    for (int i = 0; i < d.n; ++i) {
      double e = means[t][term.code[i]] - g;
      if (term.factors.size() == 2)
        for (int f : term.factors) e -= means[main_of[f]][d.terms[main_of[f]].code[i]] - g;
      lines[t].ss += e * e;
      residual[i] -= e;
    }
    lines[t].df = df;
    df_left -= df;
  }
  for (double r : residual) lines.back().ss += (r - g) * (r - g);
  lines.back().df = df_left;
  if (df_left < 1)
    fail(ErrorKind::kUsage,
         "{} runs leave no degrees of freedom for the residual: repeat some cells or leave the "
         "interactions out",
         d.n);
  for (auto& l : lines) l.ms = l.ss / l.df;
}

bool contains(const std::vector<int>& outer, const std::vector<int>& inner) {
  return std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
}

// The random terms other than `t` that contain `t` (their components are in
// E[MS_t]).
std::vector<size_t> random_above(const Design& d, size_t t) {
  std::vector<size_t> out;
  for (size_t u = 0; u < d.terms.size(); ++u)
    if (u != t && !d.terms[u].fixed && contains(d.terms[u].factors, d.terms[t].factors))
      out.push_back(u);
  return out;
}

// F of each term against the mean square whose expectation is the term's
// under the null.
void f_tests(const Design& d, std::vector<AnovaLine>& lines,
             const std::vector<std::string>& names) {
  size_t res = d.terms.size();
  for (size_t t = 0; t < d.terms.size(); ++t) {
    std::vector<size_t> want = random_above(d, t);
    std::optional<size_t> den;
    if (want.empty()) den = res;
    for (size_t u = 0; u < d.terms.size() && !den; ++u) {
      if (d.terms[u].fixed) continue;
      std::vector<size_t> has = random_above(d, u);
      has.push_back(u);
      std::sort(has.begin(), has.end());
      if (has == want) den = u;
    }
    if (!den || lines[*den].ms <= 0) continue;
    AnovaLine& l = lines[t];
    l.f = l.ms / lines[*den].ms;
    l.p_value = bm::cdf(bm::complement(bm::fisher_f(l.df, lines[*den].df), *l.f));
    l.f_denominator = names[*den];
  }
}

// Satterthwaite's interval of sum_j a_j MS_j.
std::optional<Interval> satterthwaite(const std::vector<double>& a,
                                      const std::vector<AnovaLine>& lines, double estimate,
                                      double confidence) {
  if (!(estimate > 0)) return std::nullopt;
  double denom = 0;
  for (size_t j = 0; j < a.size(); ++j) denom += std::pow(a[j] * lines[j].ms, 2) / lines[j].df;
  double df = estimate * estimate / denom, alpha = 1 - confidence;
  bm::chi_squared chi(df);
  return Interval{df * estimate / bm::quantile(chi, 1 - alpha / 2),
                  df * estimate / bm::quantile(chi, alpha / 2)};
}

// The EMS estimators: each random component a combination of mean squares,
// solved from the largest terms down.
void anova(const Design& d, FactorAnalysis& out) {
  std::vector<AnovaLine> lines;
  sums_of_squares(d, lines);
  std::vector<std::string> names;
  for (const auto& t : out.terms) names.push_back(t.name);
  f_tests(d, lines, names);
  size_t res = d.terms.size();
  std::vector<std::vector<double>> a(res + 1, std::vector<double>(res + 1, 0));
  a[res][res] = 1;
  // (Grown, not sized: GCC 12 inlining this into a unity batch takes
  // `res` for SIZE_MAX and stops the build with -Walloc-size-larger-than.)
  std::vector<size_t> order;
  for (size_t t = 0; t < res; ++t) order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return d.terms[x].factors.size() > d.terms[y].factors.size();
  });
  for (size_t t : order) {
    if (d.terms[t].fixed) continue;
    a[t][t] = 1;
    a[t][res] -= 1;
    for (size_t u : random_above(d, t)) {
      double cu = static_cast<double>(d.n) / d.terms[u].levels;
      for (size_t j = 0; j <= res; ++j) a[t][j] -= cu * a[u][j];
    }
    double ct = static_cast<double>(d.n) / d.terms[t].levels;
    for (double& v : a[t]) v /= ct;
  }
  for (size_t t = 0; t <= res; ++t) {
    out.terms[t].anova = lines[t];
    if (t < res && d.terms[t].fixed) continue;
    double est = 0;
    for (size_t j = 0; j <= res; ++j) est += a[t][j] * lines[j].ms;
    out.terms[t].anova_estimate = est;
    out.terms[t].anova_ci = satterthwaite(a[t], lines, est, out.confidence);
  }
}

// ---- REML ----------------------------------------------------------------------

// Cholesky factor (lower, in place) of a symmetric positive definite n x n
// matrix; false when it is not positive definite.
bool cholesky(Matrix& a, int n) {
  for (int j = 0; j < n; ++j) {
    double* rj = &a[j * n];
    double s = rj[j];
    for (int k = 0; k < j; ++k) s -= rj[k] * rj[k];
    if (!(s > 0)) return false;
    rj[j] = std::sqrt(s);
    for (int i = j + 1; i < n; ++i) {
      double* ri = &a[i * n];
      double t = ri[j];
      for (int k = 0; k < j; ++k) t -= ri[k] * rj[k];
      ri[j] = t / rj[j];
    }
  }
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) a[i * n + j] = 0;
  return true;
}

double log_det(const Matrix& l, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += 2 * std::log(l[i * n + i]);
  return s;
}

// Solves L L' x = b in place.
void cholesky_solve(const Matrix& l, int n, double* b) {
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < i; ++k) b[i] -= l[i * n + k] * b[k];
    b[i] /= l[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    for (int k = i + 1; k < n; ++k) b[i] -= l[k * n + i] * b[k];
    b[i] /= l[i * n + i];
  }
}

// (L L')^-1 from its Cholesky factor: L^-1 by substitution, then L^-T L^-1.
Matrix cholesky_inverse(const Matrix& l, int n) {
  Matrix inv(n * n, 0);  // L^-1, lower
  for (int j = 0; j < n; ++j) {
    inv[j * n + j] = 1 / l[j * n + j];
    for (int i = j + 1; i < n; ++i) {
      double s = 0;
      for (int k = j; k < i; ++k) s -= l[i * n + k] * inv[k * n + j];
      inv[i * n + j] = s / l[i * n + i];
    }
  }
  Matrix out(n * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int k = i; k < n; ++k) s += inv[k * n + i] * inv[k * n + j];
      out[i * n + j] = out[j * n + i] = s;
    }
  return out;
}

// The model REML sees: y, the fixed-effects design X (n x p, full rank) and
// each variance component's level per row (the residual last, one level
// per row).
struct RemlModel {
  int n = 0, p = 0;
  std::vector<double> y;  // centred and scaled: (y - mean) / sd
  double sd = 1;
  Matrix x;
  std::vector<std::vector<int>> codes;
  std::vector<int> levels;
};

// Adds `column` to X unless it is (numerically) a combination of X's
// columns, as R drops aliased columns.
void add_column(RemlModel& m, std::vector<Matrix>& basis, const std::vector<double>& column) {
  std::vector<double> r = column;
  double norm0 = std::sqrt(std::inner_product(r.begin(), r.end(), r.begin(), 0.0));
  for (const auto& q : basis) {  // q: orthonormal
    double c = std::inner_product(q.begin(), q.end(), r.begin(), 0.0);
    for (int i = 0; i < m.n; ++i) r[i] -= c * q[i];
  }
  double norm = std::sqrt(std::inner_product(r.begin(), r.end(), r.begin(), 0.0));
  if (norm <= 1e-9 * norm0) return;
  for (double& v : r) v /= norm;
  basis.push_back(r);
  Matrix x(m.n * (m.p + 1));
  for (int i = 0; i < m.n; ++i) {
    std::copy(m.x.begin() + i * m.p, m.x.begin() + (i + 1) * m.p, x.begin() + i * (m.p + 1));
    x[i * (m.p + 1) + m.p] = column[i];
  }
  m.x = std::move(x);
  ++m.p;
}

// Intercept, then treatment-coded fixed terms (a dummy per level but the
// first; an interaction's dummies are products of its factors' dummies).
RemlModel reml_model(const Design& d) {
  RemlModel m;
  m.n = d.n;
  // REML is the same for y - c (the intercept is in X) and scales with y:
  // fitting the standardised values keeps y'Py free of cancellation.
  double mean = std::accumulate(d.y.begin(), d.y.end(), 0.0) / d.n, ss = 0;
  for (double v : d.y) ss += (v - mean) * (v - mean);
  m.sd = std::sqrt(ss / (d.n - 1));
  for (double v : d.y) m.y.push_back((v - mean) / m.sd);
  std::vector<Matrix> basis;
  add_column(m, basis, std::vector<double>(d.n, 1.0));
  for (const Term& t : d.terms) {
    if (!t.fixed) {
      m.codes.push_back(t.code);
      m.levels.push_back(t.levels);
      continue;
    }
    int f = t.factors[0], g = t.factors.size() == 2 ? t.factors[1] : -1;
    for (int a = 1; a < d.levels[f]; ++a)
      for (int b = 1; b < (g < 0 ? 2 : d.levels[g]); ++b) {
        std::vector<double> col(d.n);
        for (int i = 0; i < d.n; ++i)
          col[i] = d.codes[f][i] == a && (g < 0 || d.codes[g][i] == b) ? 1 : 0;
        add_column(m, basis, col);
      }
  }
  std::vector<int> each(d.n);
  std::iota(each.begin(), each.end(), 0);
  m.codes.push_back(each);
  m.levels.push_back(d.n);
  if (m.n <= m.p)
    fail(ErrorKind::kUsage, "{} runs for {} fixed effects: REML needs more runs", m.n, m.p);
  return m;
}

// The REML log-likelihood at s2 and, with `derivatives`, its gradient, its
// Hessian and the expected information in s2.
struct RemlPoint {
  double loglik = -INFINITY;
  std::vector<double> grad;
  Matrix hess, info;
};

// P = V^-1 - V^-1 X (X' V^-1 X)^-1 X' V^-1; false when V is singular.
bool projection(const RemlModel& m, const std::vector<double>& s2, Matrix& p, double& log_dets) {
  int n = m.n, q = m.p;
  Matrix v(n * n, 0);
  for (size_t k = 0; k < s2.size(); ++k)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (m.codes[k][i] == m.codes[k][j]) v[i * n + j] += s2[k];
  if (!cholesky(v, n)) return false;
  log_dets = log_det(v, n);
  p = cholesky_inverse(v, n);
  Matrix vx(n * q, 0), c(q * q, 0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int a = 0; a < q; ++a) vx[i * q + a] += p[i * n + k] * m.x[k * q + a];
  for (int a = 0; a < q; ++a)
    for (int b = 0; b < q; ++b)
      for (int i = 0; i < n; ++i) c[a * q + b] += m.x[i * q + a] * vx[i * q + b];
  if (!cholesky(c, q)) return false;
  log_dets += log_det(c, q);
  std::vector<double> w(q);
  for (int i = 0; i < n; ++i) {
    std::copy(vx.begin() + i * q, vx.begin() + (i + 1) * q, w.begin());
    cholesky_solve(c, q, w.data());  // C^-1 (V^-1 X)' column i
    for (int j = 0; j < n; ++j)
      for (int a = 0; a < q; ++a) p[j * n + i] -= vx[j * q + a] * w[a];
  }
  return true;
}

// Sums the rows of an n x cols matrix by level: Z' A.
Matrix sum_rows(const Matrix& a, int cols, const std::vector<int>& code, int levels) {
  Matrix out(static_cast<size_t>(levels) * cols, 0);
  for (size_t i = 0; i < code.size(); ++i)
    for (int c = 0; c < cols; ++c) out[code[i] * cols + c] += a[i * cols + c];
  return out;
}

// Derivatives through M_kl = Z_k' P Z_l and u_k = Z_k' P y:
//   dl/ds2_k = -tr(M_kk)/2 + |u_k|^2/2, info_kl = |M_kl|_F^2 / 2,
//   d2l/ds2_k ds2_l = info_kl - u_k' M_kl u_l.
void derivatives(const RemlModel& m, const Matrix& p, const std::vector<double>& py,
                 RemlPoint& out) {
  size_t c = m.codes.size();
  int n = m.n;
  std::vector<Matrix> pz, u;  // P Z_l (n x q_l), Z_k' P y
  for (size_t l = 0; l < c; ++l) {
    // P' = P: P Z is the transpose of Z' P.
    Matrix zp = sum_rows(p, n, m.codes[l], m.levels[l]);
    Matrix a(static_cast<size_t>(n) * m.levels[l]);
    for (int j = 0; j < m.levels[l]; ++j)
      for (int i = 0; i < n; ++i) a[i * m.levels[l] + j] = zp[j * n + i];
    pz.push_back(std::move(a));
    u.push_back(sum_rows(py, 1, m.codes[l], m.levels[l]));
  }
  out.grad.assign(c, 0);
  out.hess.assign(c * c, 0);
  out.info.assign(c * c, 0);
  for (size_t k = 0; k < c; ++k) {
    for (size_t l = k; l < c; ++l) {
      int qk = m.levels[k], ql = m.levels[l];
      Matrix mkl = sum_rows(pz[l], ql, m.codes[k], qk);
      double frob = 0, quad = 0;
      for (int a = 0; a < qk; ++a)
        for (int b = 0; b < ql; ++b) {
          frob += mkl[a * ql + b] * mkl[a * ql + b];
          quad += u[k][a] * mkl[a * ql + b] * u[l][b];
        }
      out.info[k * c + l] = out.info[l * c + k] = frob / 2;
      out.hess[k * c + l] = out.hess[l * c + k] = frob / 2 - quad;
      if (k != l) continue;
      double tr = 0, uu = 0;
      for (int a = 0; a < qk; ++a) tr += mkl[a * ql + a], uu += u[k][a] * u[k][a];
      out.grad[k] = (uu - tr) / 2;
    }
  }
}

RemlPoint reml_point(const RemlModel& m, const std::vector<double>& s2, bool with_derivatives) {
  RemlPoint out;
  Matrix p;
  double log_dets = 0;
  if (!projection(m, s2, p, log_dets)) return out;
  int n = m.n;
  std::vector<double> py(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) py[i] += p[i * n + j] * m.y[j];
  double ypy = std::inner_product(py.begin(), py.end(), m.y.begin(), 0.0);
  out.loglik = -0.5 * ((n - m.p) * std::log(2 * M_PI) + log_dets + ypy);
  if (with_derivatives) derivatives(m, p, py, out);
  return out;
}

// Solves A x = b for a symmetric positive definite A (k x k); false when
// it is not.
bool spd_solve(Matrix a, int k, std::vector<double>& b) {
  if (!cholesky(a, k)) return false;
  cholesky_solve(a, k, b.data());
  return true;
}

struct RemlFit {
  std::vector<double> s2;
  std::vector<bool> active;
  RemlPoint at;
  int iterations = 0;
  bool converged = false;
};

// The Newton step on the log of the active components (Fisher scoring
// where the Hessian is not negative definite).
std::vector<double> log_step(const RemlFit& f, const std::vector<int>& act) {
  int k = static_cast<int>(act.size()), c = static_cast<int>(f.s2.size());
  Matrix neg_h(k * k), info(k * k);
  std::vector<double> g(k);
  for (int a = 0; a < k; ++a) {
    double sa = f.s2[act[a]];
    g[a] = sa * f.at.grad[act[a]];
    for (int b = 0; b < k; ++b) {
      double sab = sa * f.s2[act[b]];
      neg_h[a * k + b] = -sab * f.at.hess[act[a] * c + act[b]] - (a == b ? g[a] : 0);
      info[a * k + b] = sab * f.at.info[act[a] * c + act[b]];
    }
  }
  std::vector<double> step = g;
  if (!spd_solve(neg_h, k, step)) {
    step = g;
    spd_solve(info, k, step);
  }
  return step;
}

// One iteration: a component at the boundary leaves, or a line search
// along the log step. False when converged or stuck.
bool reml_iteration(const RemlModel& m, RemlFit& f, double scale) {
  std::vector<int> act;
  for (size_t k = 0; k < f.s2.size(); ++k) {
    bool residual = k + 1 == f.s2.size();
    if (f.active[k] && !residual && f.s2[k] < 1e-10 * scale && f.at.grad[k] < 0) {
      f.active[k] = false;
      f.s2[k] = 0;
      f.at = reml_point(m, f.s2, true);
      return true;
    }
    if (f.active[k]) act.push_back(static_cast<int>(k));
  }
  std::vector<double> step = log_step(f, act);
  double big = 0;
  for (double s : step) big = std::max(big, std::fabs(s));
  if (!(big > 1e-12)) return f.converged = true, false;
  double shrink = big > 3 ? 3 / big : 1;  // at most a factor e^3 at once
  for (double t = shrink; t > 1e-12; t /= 2) {
    std::vector<double> s2 = f.s2;
    for (size_t a = 0; a < act.size(); ++a) s2[act[a]] *= std::exp(t * step[a]);
    RemlPoint at = reml_point(m, s2, true);
    // Near the optimum rounding may cost the last bits of the likelihood.
    if (at.loglik >= f.at.loglik - 1e-13 * std::fabs(f.at.loglik) || big < 1e-8) {
      f.s2 = s2;
      f.at = std::move(at);
      if (t * big > 1e-13) return true;
      break;  // no step the likelihood can tell from rounding
    }
  }
  f.converged = big < 1e-6;
  return false;
}

// Brings back a component at 0 whose REML score there is positive.
bool reenter(const RemlModel& m, RemlFit& f, double scale, std::vector<int>& reentries) {
  for (size_t k = 0; k + 1 < f.s2.size(); ++k) {
    if (f.active[k] || f.at.grad[k] * scale <= 1e-8 || reentries[k] >= 3) continue;
    ++reentries[k];
    f.active[k] = true;
    f.s2[k] = 1e-3 * scale;
    f.at = reml_point(m, f.s2, true);
    f.converged = false;
    return true;
  }
  return false;
}

RemlFit reml_fit(const RemlModel& m) {
  const double scale = 1;  // the variance of the standardised y
  RemlFit f;
  size_t c = m.codes.size();
  f.s2.assign(c, scale / c);
  f.active.assign(c, true);
  f.at = reml_point(m, f.s2, true);
  std::vector<int> reentries(c, 0);
  for (f.iterations = 0; f.iterations < 500; ++f.iterations) {
    if (reml_iteration(m, f, scale)) continue;
    if (!f.converged || !reenter(m, f, scale, reentries)) break;
  }
  return f;
}

// s2 exp(-+ z se) with se of log s2 from the inverse expected information
// of the active components' logs.
std::vector<std::optional<Interval>> wald_log_intervals(const RemlFit& f, double confidence) {
  std::vector<int> act;
  for (size_t k = 0; k < f.s2.size(); ++k)
    if (f.active[k]) act.push_back(static_cast<int>(k));
  int k = static_cast<int>(act.size()), c = static_cast<int>(f.s2.size());
  Matrix info(k * k);
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b)
      info[a * k + b] = f.s2[act[a]] * f.s2[act[b]] * f.at.info[act[a] * c + act[b]];
  double z = bm::quantile(bm::normal(), 0.5 + confidence / 2);
  std::vector<std::optional<Interval>> out(c);
  for (int a = 0; a < k; ++a) {
    std::vector<double> e(k, 0);
    e[a] = 1;
    if (!spd_solve(info, k, e)) break;
    double se = std::sqrt(e[a]), s2 = f.s2[act[a]];
    out[act[a]] = Interval{s2 * std::exp(-z * se), s2 * std::exp(z * se)};
  }
  return out;
}

void reml(const Design& d, FactorAnalysis& out) {
  RemlModel m = reml_model(d);
  RemlFit f = reml_fit(m);
  auto ci = wald_log_intervals(f, out.confidence);
  // Back to the scale of the data: s2 sd^2, and the density of y = sd z.
  double v = m.sd * m.sd;
  for (double& s2 : f.s2) s2 *= v;
  for (auto& i : ci)
    if (i) i = Interval{i->low * v, i->high * v};
  out.reml_log_likelihood = f.at.loglik - (m.n - m.p) * std::log(m.sd);
  out.reml_iterations = f.iterations;
  out.fixed_parameters = m.p;
  if (!f.converged)
    out.notes.push_back(fmt::format("REML did not converge in {} iterations", f.iterations));
  size_t k = 0;
  for (auto& t : out.terms) {
    if (t.fixed) continue;
    t.reml_estimate = f.s2[k];
    t.reml_ci = ci[k];
    ++k;
  }
}

}  // namespace

FactorAnalysis analyse_factors(const FactorData& data, const FactorOptions& options) {
  if (!(options.confidence > 0 && options.confidence < 1))
    fail(ErrorKind::kUsage, "confidence is {}: give a level between 0 and 1, e.g. 0.95",
         options.confidence);
  Design d = encode(data, options);
  FactorAnalysis out;
  out.factors = data.factors;
  out.fixed = data.fixed.empty() ? std::vector<bool>(data.factors.size(), false) : data.fixed;
  out.n = d.n;
  out.balanced = d.balanced;
  out.replicates = d.replicates;
  out.confidence = options.confidence;
  for (const Term& t : d.terms) out.terms.push_back({t.name, t.factors, t.fixed, t.levels});
  out.terms.push_back({"residual", {}, false, d.n});
  if (d.balanced) {
    anova(d, out);
  } else if (!options.reml) {
    fail(ErrorKind::kUsage,
         "unbalanced cells: ANOVA needs every cell with the same number of runs; fit REML");
  } else {
    out.notes.push_back(
        "unbalanced cells: the components are REML's (ANOVA needs every cell "
        "with the same number of runs)");
  }
  if (options.reml && d.n <= kMaxRemlRuns) {
    reml(d, out);
  } else if (options.reml && d.balanced) {
    out.notes.push_back(fmt::format("{} runs: REML left out (at most {})", d.n, kMaxRemlRuns));
  } else if (options.reml) {
    fail(ErrorKind::kUsage, "{} unbalanced runs: REML here handles at most {} (dense matrices)",
         d.n, kMaxRemlRuns);
  }
  out.method = d.balanced ? "ANOVA" : "REML";
  double total = 0;
  for (auto& t : out.terms) {
    if (t.fixed) continue;
    t.variance = d.balanced ? std::max(0.0, *t.anova_estimate) : *t.reml_estimate;
    total += t.variance;
  }
  for (auto& t : out.terms)
    if (!t.fixed) t.share = t.variance / total;
  return out;
}

FactorData collect_factors(store::Store& store, const Selection& selection,
                           const std::vector<std::string>& by, std::vector<std::string>& notes) {
  FactorData out;
  std::unordered_map<std::string, size_t> row_of;
  for (const auto& key : by) {
    Selection s = selection;
    s.by = key;
    out.factors.push_back(key);
    std::vector<std::string> left_out;  // the same runs for every key: noted once
    for (const RunValue& v : finite_values(collect(store, s), selection.metric, left_out)) {
      auto [at, added] = row_of.emplace(v.run, out.rows.size());
      if (added) out.rows.push_back({{}, v.value});
      out.rows[at->second].levels.push_back(v.group);
    }
    for (auto& n : left_out)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(std::move(n));
  }
  return out;
}

}  // namespace trainscope::stats
