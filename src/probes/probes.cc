#include "trainscope/probes/probes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainscope/core/error.h"

namespace trainscope::probes {

namespace {
constexpr std::pair<Kind, const char*> kNames[] = {
    {Kind::kActivations, "activations"},
    {Kind::kLayerGradients, "layer_gradients"},
    {Kind::kWeights, "weights"},
    {Kind::kWeightGradients, "weight_gradients"},
    {Kind::kWeightUpdates, "weight_updates"},
    {Kind::kBiases, "biases"},
    {Kind::kBiasGradients, "bias_gradients"},
    {Kind::kBiasUpdates, "bias_updates"},
};
}  // namespace

const char* to_string(Kind k) {
  for (const auto& [kind, name] : kNames)
    if (kind == k) return name;
  return "?";
}

Kind parse_kind(const std::string& name) {
  std::string valid;
  for (const auto& [kind, n] : kNames) {
    if (name == n) return kind;
    valid += (valid.empty() ? "" : ", ") + std::string(n);
  }
  core::fail(core::ErrorKind::kUsage, "unknown probe kind '{}'; the kinds are {}", name, valid);
}

const std::vector<Kind>& all_kinds() {
  static const std::vector<Kind> kAll = [] {
    std::vector<Kind> v;
    for (const auto& [kind, n] : kNames) v.push_back(kind);
    return v;
  }();
  return kAll;
}

int64_t Histogram::finite() const {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

Histogram make_histogram(const std::vector<float>& values, int bins) {
  Histogram h;
  h.counts.assign(std::max(1, bins), 0);
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : values) {
    if (std::isnan(v)) {
      ++h.nan;
    } else if (std::isinf(v)) {
      ++(v > 0 ? h.pos_inf : h.neg_inf);
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      h.sum += v;
      h.sum_squares += static_cast<double>(v) * v;
    }
  }
  if (!(lo <= hi)) return h;  // nothing finite
  h.low = lo;
  h.high = hi;
  double width = (static_cast<double>(hi) - lo) / bins;
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    int b = width > 0 ? static_cast<int>((v - h.low) / width) : 0;
    ++h.counts[std::clamp(b, 0, bins - 1)];
  }
  return h;
}

std::string series_key(const std::string& layer, const std::string& name) {
  return layer.empty() ? "probe/" + name : "probe/" + layer + "/" + name;
}

std::string histogram_key(const std::string& layer, Kind kind) {
  return layer + "/" + to_string(kind);
}

}  // namespace trainscope::probes
