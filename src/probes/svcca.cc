// SVCCA (Raghu et al., 2017) between two views of the same inputs, and the
// subscriber that tracks it for a layer between probe steps.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <unordered_map>

#include "trainscope/probes/builtin.h"

namespace trainscope::probes {

namespace {

using Matrix = std::vector<double>;  // row-major

// Eigen-decomposition of a symmetric d x d matrix by cyclic Jacobi
// rotations: eigenvalues in `values`, eigenvectors as columns of `vectors`.
void jacobi_eigen(Matrix a, int d, std::vector<double>& values, Matrix& vectors) {
  vectors.assign(static_cast<size_t>(d) * d, 0.0);
  for (int i = 0; i < d; ++i) vectors[i * d + i] = 1;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0;
    for (int p = 0; p < d; ++p)
      for (int q = p + 1; q < d; ++q) off += a[p * d + q] * a[p * d + q];
    if (off < 1e-22) break;
    for (int p = 0; p < d; ++p)
      for (int q = p + 1; q < d; ++q) {
        double apq = a[p * d + q];
        if (std::fabs(apq) < 1e-300) continue;
        double theta = (a[q * d + q] - a[p * d + p]) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < d; ++k) {  // A <- A J (columns p, q)
          double akp = a[k * d + p], akq = a[k * d + q];
          a[k * d + p] = c * akp - s * akq;
          a[k * d + q] = s * akp + c * akq;
        }
        for (int k = 0; k < d; ++k) {  // A <- J^T A (rows p, q)
          double apk = a[p * d + k], aqk = a[q * d + k];
          a[p * d + k] = c * apk - s * aqk;
          a[q * d + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < d; ++k) {
          double vkp = vectors[k * d + p], vkq = vectors[k * d + q];
          vectors[k * d + p] = c * vkp - s * vkq;
          vectors[k * d + q] = s * vkp + c * vkq;
        }
      }
  }
  values.resize(d);
  for (int i = 0; i < d; ++i) values[i] = a[i * d + i];
}

// Centres X (n x d), keeps the directions holding `keep` of its variance and
// returns them whitened: an n x k matrix with orthonormal columns.
Matrix whitened_top_directions(Matrix x, int n, int d, double keep, int& k) {
  for (int j = 0; j < d; ++j) {
    double m = 0;
    for (int i = 0; i < n; ++i) m += x[i * d + j];
    m /= n;
    for (int i = 0; i < n; ++i) x[i * d + j] -= m;
  }
  Matrix cov(static_cast<size_t>(d) * d, 0.0);
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < d; ++p)
      for (int q = p; q < d; ++q) cov[p * d + q] += x[i * d + p] * x[i * d + q];
  for (int p = 0; p < d; ++p)
    for (int q = 0; q < p; ++q) cov[p * d + q] = cov[q * d + p];
  std::vector<double> ev;
  Matrix vec;
  jacobi_eigen(cov, d, ev, vec);
  std::vector<int> order(d);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ev[a] > ev[b]; });
  double total = 0, acc = 0;
  for (double e : ev) total += std::max(e, 0.0);
  k = 0;
  while (k < d && ev[order[k]] > total * 1e-12 && (k == 0 || acc < keep * total))
    acc += ev[order[k++]];
  Matrix q(static_cast<size_t>(n) * k, 0.0);
  for (int c = 0; c < k; ++c) {
    int j = order[c];
    double scale = 1 / std::sqrt(ev[j]);
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int p = 0; p < d; ++p) s += x[i * d + p] * vec[p * d + j];
      q[i * k + c] = s * scale;
    }
  }
  return q;
}

}  // namespace

double svcca(const std::vector<double>& x, int dx, const std::vector<double>& y, int dy, int n,
             double keep) {
  int kx = 0, ky = 0;
  Matrix qx = whitened_top_directions(x, n, dx, keep, kx);
  Matrix qy = whitened_top_directions(y, n, dy, keep, ky);
  if (kx == 0 || ky == 0) return NAN;
  // Canonical correlations: singular values of Qx^T Qy, i.e. square roots
  // of the eigenvalues of M M^T.
  Matrix m(static_cast<size_t>(kx) * ky, 0.0), mmt(static_cast<size_t>(kx) * kx, 0.0);
  for (int i = 0; i < n; ++i)
    for (int a = 0; a < kx; ++a)
      for (int b = 0; b < ky; ++b) m[a * ky + b] += qx[i * kx + a] * qy[i * ky + b];
  for (int a = 0; a < kx; ++a)
    for (int c = 0; c < kx; ++c)
      for (int b = 0; b < ky; ++b) mmt[a * kx + c] += m[a * ky + b] * m[c * ky + b];
  std::vector<double> ev;
  Matrix vec;
  jacobi_eigen(mmt, kx, ev, vec);
  std::sort(ev.rbegin(), ev.rend());
  int r = std::min(kx, ky);
  double sum = 0;
  for (int i = 0; i < r; ++i) sum += std::sqrt(std::clamp(ev[i], 0.0, 1.0));
  return sum / r;
}

namespace {

// A [n, units, ...] buffer as n x units, spatial positions averaged.
std::vector<double> per_unit(const Buffer& b, int& units) {
  int64_t n = b.shape[0];
  units = static_cast<int>(b.shape.size() > 1 ? b.shape[1] : 1);
  int64_t inner = static_cast<int64_t>(b.values.size()) / (n * units);
  std::vector<double> out(static_cast<size_t>(n) * units, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int u = 0; u < units; ++u) {
      const float* v = b.values.data() + (i * units + u) * inner;
      double s = 0;
      for (int64_t j = 0; j < inner; ++j) s += v[j];
      out[i * units + u] = s / inner;
    }
  return out;
}

class Svcca : public Subscriber {
 public:
  explicit Svcca(int64_t every) : every_(every) {}
  std::string name() const override { return "svcca"; }
  std::set<Kind> kinds() const override { return {Kind::kReferenceActivations}; }
  int64_t every() const override { return every_; }
  void on_layer(const LayerPacket& p, Sink& sink) override {
    const Buffer* b = p.get(Kind::kReferenceActivations);
    if (!b || b->shape.empty() || b->shape[0] < 4) return;
    int units = 0;
    std::vector<double> now = per_unit(*b, units);
    std::vector<double> before;
    int before_units = 0;
    {
      std::lock_guard lock(mu_);
      auto& prev = previous_[p.layer->name];
      before.swap(prev.first);
      before_units = prev.second;
      prev = {now, units};
    }
    if (before.empty() || units > 512) return;
    double s = svcca(before, before_units, now, units, static_cast<int>(b->shape[0]));
    if (std::isfinite(s))
      sink.scalar({p.layer->name, "activations/svcca", p.at, s, p.layer->index});
  }

 private:
  int64_t every_;
  std::mutex mu_;
  std::unordered_map<std::string, std::pair<std::vector<double>, int>> previous_;
};

}  // namespace

std::shared_ptr<Subscriber> svcca_subscriber(int64_t every) {
  return std::make_shared<Svcca>(every);
}

}  // namespace trainscope::probes
