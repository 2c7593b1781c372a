#include "trainscope/core/error.h"
#include "trainscope/probes/builtin.h"

namespace trainscope::probes {

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> kNames = {"off", "economy", "standard", "full"};
  return kNames;
}

void check_preset(const std::string& name) {
  for (const auto& p : preset_names())
    if (p == name) return;
  core::fail(core::ErrorKind::kUsage,
             "unknown probes preset '{}'; the presets are off, economy, standard and full", name);
}

int64_t ProbeSettings::period() const {
  if (every > 0) return every;
  return preset == "full" ? 1 : 10;
}

namespace {

// The preset's kinds, narrowed by settings.kinds when given.
std::set<Kind> keep(const ProbeSettings& s, std::set<Kind> kinds) {
  if (s.kinds.empty()) return kinds;
  std::set<Kind> out;
  for (Kind k : kinds)
    if (s.kinds.count(k)) out.insert(k);
  return out;
}

}  // namespace

std::vector<std::shared_ptr<Subscriber>> builtin_subscribers(const ProbeSettings& s) {
  check_preset(s.preset);
  std::vector<std::shared_ptr<Subscriber>> out;
  if (!s.enabled()) return out;
  bool standard = s.preset != "economy", full = s.preset == "full";
  auto add_if = [&](const std::set<Kind>& need, std::shared_ptr<Subscriber> sub) {
    if (keep(s, need).size() == need.size()) out.push_back(std::move(sub));
  };
  std::set<Kind> norm_kinds = {Kind::kWeights, Kind::kWeightGradients};
  if (standard) norm_kinds.insert({Kind::kLayerGradients, Kind::kBiases});
  if (full)
    norm_kinds.insert(
        {Kind::kActivations, Kind::kWeightUpdates, Kind::kBiasGradients, Kind::kBiasUpdates});
  if (auto k = keep(s, norm_kinds); !k.empty()) out.push_back(norms_subscriber(k));
  add_if({Kind::kWeights, Kind::kWeightUpdates}, update_ratio_subscriber());
  if (standard) {
    add_if({Kind::kWeights}, spectral_norm_subscriber());
    add_if({Kind::kActivations}, activation_stats_subscriber());
    std::set<Kind> hist = {Kind::kWeights, Kind::kWeightGradients};
    if (full)
      hist = {Kind::kActivations,     Kind::kLayerGradients, Kind::kWeights,
              Kind::kWeightGradients, Kind::kWeightUpdates,  Kind::kBiases,
              Kind::kBiasGradients,   Kind::kBiasUpdates};
    if (auto k = keep(s, hist); !k.empty())
      out.push_back(histogram_subscriber(k, s.histogram_bins));
  }
  if (full)
    add_if({Kind::kReferenceActivations}, svcca_subscriber(std::max<int64_t>(50, s.period())));
  out.push_back(training_subscriber(s.period()));
  out.push_back(alert_rules(s.alerts));
  return out;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = t;
    } else if (star != std::string::npos) {
      p = star + 1, t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool layer_selected(const ProbeSettings& s, const LayerInfo& layer) {
  if (!glob_match(s.layers, layer.name)) return false;
  if (s.max_depth > 0 && layer.depth > s.max_depth) return false;
  if (s.types.empty()) return true;
  for (const auto& t : s.types)
    if (t == layer.type) return true;
  return false;
}

}  // namespace trainscope::probes
