// The built-in per-layer and meta subscribers (alert rules: alerts.cc).
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "trainscope/probes/builtin.h"

namespace trainscope::probes {

namespace {

// Sums of squares in 8 independent lanes, so that the loop vectorises
// without reassociating one accumulator (no -ffast-math needed).
double l2(const std::vector<float>& v) {
  double lane[8] = {};
  size_t n = v.size(), i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) lane[k] += static_cast<double>(v[i + k]) * v[i + k];
  double s = 0;
  for (double x : lane) s += x;
  for (; i < n; ++i) s += static_cast<double>(v[i]) * v[i];
  return std::sqrt(s);
}

// Largest magnitude; NaN if any value is NaN.
double max_abs(const std::vector<float>& v) {
  float lane[8] = {};
  size_t n = v.size(), i = 0;
  bool nan = false;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      float a = std::fabs(v[i + k]);
      lane[k] = a > lane[k] ? a : lane[k];
      nan |= a != a;
    }
  float m = 0;
  for (float x : lane) m = std::max(m, x);
  for (; i < n; ++i) {
    m = std::max(m, std::fabs(v[i]));
    nan |= std::isnan(v[i]);
  }
  return nan ? NAN : m;
}

void publish(Sink& sink, const LayerPacket& p, Kind k, const char* stat, double value) {
  sink.scalar({p.layer->name, std::string(to_string(k)) + "/" + stat, p.at, value, p.layer->index});
}

class Norms : public Subscriber {
 public:
  Norms(std::set<Kind> kinds, int64_t every) : kinds_(std::move(kinds)), every_(every) {}
  std::string name() const override { return "norms"; }
  std::set<Kind> kinds() const override { return kinds_; }
  int64_t every() const override { return every_; }
  void on_layer(const LayerPacket& p, Sink& sink) override {
    for (Kind k : kinds_) {
      const Buffer* b = p.get(k);
      if (!b) continue;
      publish(sink, p, k, "l2", l2(b->values));
      publish(sink, p, k, "max", max_abs(b->values));
    }
  }

 private:
  std::set<Kind> kinds_;
  int64_t every_;
};

// ||Δw|| / ||w||, with w the weights the step started from (w_new - Δw).
// Every step of the first 10 too: a wrong learning rate shows most plainly
// in the first updates (with Adam the weights then grow until the ratio
// looks ordinary).
class UpdateRatio : public Subscriber {
 public:
  explicit UpdateRatio(int64_t every) : every_(every) {}
  std::string name() const override { return "update_ratio"; }
  std::set<Kind> kinds() const override { return {Kind::kWeights, Kind::kWeightUpdates}; }
  int64_t every() const override { return every_; }
  int64_t warmup_steps() const override { return 10; }
  void on_layer(const LayerPacket& p, Sink& sink) override {
    const Buffer *w = p.get(Kind::kWeights), *dw = p.get(Kind::kWeightUpdates);
    if (!w || !dw || w->values.size() != dw->values.size()) return;
    double before = 0;
    for (size_t i = 0; i < w->values.size(); ++i) {
      double x = static_cast<double>(w->values[i]) - dw->values[i];
      before += x * x;
    }
    if (before > 0)
      publish(sink, p, Kind::kWeights, "update_ratio", l2(dw->values) / std::sqrt(before));
  }

 private:
  int64_t every_;
};

// The largest singular value of the weights seen as a matrix [out, rest],
// by power iteration warm-started from the layer's previous vector: two
// iterations per step suffice once the weights move slowly.
class SpectralNorm : public Subscriber {
 public:
  explicit SpectralNorm(int64_t every) : every_(every) {}
  std::string name() const override { return "spectral_norm"; }
  std::set<Kind> kinds() const override { return {Kind::kWeights}; }
  int64_t every() const override { return every_; }
  void on_layer(const LayerPacket& p, Sink& sink) override {
    const Buffer* w = p.get(Kind::kWeights);
    if (!w || w->shape.size() < 2) return;
    int64_t rows = w->shape[0], cols = static_cast<int64_t>(w->values.size()) / rows;
    std::vector<double> v;
    {
      std::lock_guard lock(mu_);
      v = vectors_[p.layer->name];
    }
    bool fresh = static_cast<int64_t>(v.size()) != cols;
    if (fresh) v.assign(cols, 1.0 / std::sqrt(static_cast<double>(cols)));
    double sigma = 0;
    for (int it = 0; it < (fresh ? 20 : 2); ++it) sigma = iterate(w->values, rows, cols, v);
    publish(sink, p, Kind::kWeights, "spectral_norm", sigma);
    std::lock_guard lock(mu_);
    vectors_[p.layer->name] = std::move(v);
  }

 private:
  // u = W v, sigma = |u|; v = W^T u / |W^T u|.
  static double iterate(const std::vector<float>& w, int64_t rows, int64_t cols,
                        std::vector<double>& v) {
    std::vector<double> u(rows, 0.0), next(cols, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += w[r * cols + c] * v[c];
      u[r] = s;
    }
    double sigma = 0;
    for (double x : u) sigma += x * x;
    sigma = std::sqrt(sigma);
    if (sigma == 0) return 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) next[c] += w[r * cols + c] * u[r] / sigma;
    double n = 0;
    for (double x : next) n += x * x;
    n = std::sqrt(n);
    if (n > 0)
      for (int64_t c = 0; c < cols; ++c) v[c] = next[c] / n;
    return sigma;
  }
  int64_t every_;
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<double>> vectors_;
};

class Histograms : public Subscriber {
 public:
  Histograms(std::set<Kind> kinds, int bins, int64_t every)
      : kinds_(std::move(kinds)), bins_(bins), every_(every) {}
  std::string name() const override { return "histograms"; }
  std::set<Kind> kinds() const override { return kinds_; }
  int64_t every() const override { return every_; }
  void on_layer(const LayerPacket& p, Sink& sink) override {
    for (Kind k : kinds_)
      if (const Buffer* b = p.get(k))
        sink.histogram(p.layer->name, k, p.at, make_histogram(b->values, bins_));
  }

 private:
  std::set<Kind> kinds_;
  int bins_;
  int64_t every_;
};

// Mean, SD and the fraction of exact zeros of a layer's output; for ReLU
// layers the fraction of dead units (a channel or feature that is zero for
// every sample of the batch), for Tanh/Sigmoid the fraction saturated.
class ActivationStats : public Subscriber {
 public:
  explicit ActivationStats(int64_t every) : every_(every) {}
  std::string name() const override { return "activation_stats"; }
  std::set<Kind> kinds() const override { return {Kind::kActivations}; }
  int64_t every() const override { return every_; }
  void on_layer(const LayerPacket& p, Sink& sink) override {
    const Buffer* a = p.get(Kind::kActivations);
    if (!a || a->values.empty()) return;
    const auto& v = a->values;
    double sum = 0, sq = 0;
    int64_t zeros = 0;
    for (float x : v) {
      sum += x;
      sq += static_cast<double>(x) * x;
      zeros += x == 0;
    }
    double n = static_cast<double>(v.size()), mean = sum / n;
    const Kind k = Kind::kActivations;
    publish(sink, p, k, "mean", mean);
    publish(sink, p, k, "sd", std::sqrt(std::max(0.0, sq / n - mean * mean)));
    publish(sink, p, k, "zero_fraction", zeros / n);
    const std::string& type = p.layer->type;
    if (type == "ReLU" && a->shape.size() >= 2) publish(sink, p, k, "dead_fraction", dead(*a));
    if (type == "Tanh" || type == "Sigmoid") {
      int64_t sat = 0;
      for (float x : v) sat += type == "Tanh" ? std::fabs(x) > 0.99f : (x < 0.01f || x > 0.99f);
      publish(sink, p, k, "saturated_fraction", sat / n);
    }
  }

 private:
  static double dead(const Buffer& a) {
    int64_t batch = a.shape[0], units = a.shape[1];
    int64_t inner = static_cast<int64_t>(a.values.size()) / (batch * units);
    std::vector<char> alive(units, 0);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t u = 0; u < units; ++u) {
        const float* x = a.values.data() + (b * units + u) * inner;
        for (int64_t i = 0; i < inner && !alive[u]; ++i) alive[u] = x[i] != 0;
      }
    int64_t d = 0;
    for (char al : alive) d += !al;
    return static_cast<double>(d) / units;
  }
  int64_t every_;
};

// Loss and train accuracy over the batches since the last publication, and
// the accuracy and loss of each evaluation.
class Training : public Subscriber {
 public:
  explicit Training(int64_t every) : every_(std::max<int64_t>(1, every)) {}
  std::string name() const override { return "training"; }
  bool wants_meta() const override { return true; }
  void on_meta(const MetaPacket& m, Sink& sink) override {
    if (m.event == MetaPacket::Event::kEvaluation) {
      if (m.samples <= 0) return;
      sink.scalar({"", m.split + "_accuracy", m.at, static_cast<double>(m.correct) / m.samples});
      sink.scalar({"", m.split + "_loss", m.at, m.loss});
      return;
    }
    if (m.event != MetaPacket::Event::kBatchFinished) return;
    loss_ += m.loss * m.samples;
    samples_ += m.samples;
    if (m.labelled) correct_ += m.correct, labelled_ += m.samples;
    if (m.at.step % every_ != 0 || samples_ == 0) return;
    sink.scalar({"", "loss", m.at, loss_ / samples_});
    if (labelled_ > 0)  // a batch whose labels were not seen has no accuracy, not 0
      sink.scalar({"", "train_accuracy", m.at, static_cast<double>(correct_) / labelled_});
    loss_ = 0;
    correct_ = samples_ = labelled_ = 0;
  }

 private:
  int64_t every_;
  double loss_ = 0;
  int64_t correct_ = 0, samples_ = 0, labelled_ = 0;  // labelled_: samples whose labels were seen
};

}  // namespace

std::shared_ptr<Subscriber> norms_subscriber(std::set<Kind> kinds, int64_t every) {
  return std::make_shared<Norms>(std::move(kinds), every);
}
std::shared_ptr<Subscriber> update_ratio_subscriber(int64_t every) {
  return std::make_shared<UpdateRatio>(every);
}
std::shared_ptr<Subscriber> spectral_norm_subscriber(int64_t every) {
  return std::make_shared<SpectralNorm>(every);
}
std::shared_ptr<Subscriber> histogram_subscriber(std::set<Kind> kinds, int bins, int64_t every) {
  return std::make_shared<Histograms>(std::move(kinds), bins, every);
}
std::shared_ptr<Subscriber> activation_stats_subscriber(int64_t every) {
  return std::make_shared<ActivationStats>(every);
}
std::shared_ptr<Subscriber> training_subscriber(int64_t every) {
  return std::make_shared<Training>(every);
}

}  // namespace trainscope::probes
