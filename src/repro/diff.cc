#include "trainscope/repro/diff.h"

#include <bit>
#include <cmath>
#include <map>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/fingerprint/records.h"

namespace trainscope::repro {
using fingerprint::Fingerprint;
using fingerprint::FingerprintSet;
using store::RunInfo;
using store::Store;

namespace {

// Maps IEEE bits to integers that are ordered like the values, so that the
// difference of two mapped values is their distance in ULPs. 128-bit, so
// that the difference of two float64 images is exact (a double holds only
// 53 bits: 1 ULP became 0, 700 became 512).
template <typename Int>
__int128 ordered(Int bits) {
  using U = std::make_unsigned_t<Int>;
  constexpr U kSignBit = U{1} << (sizeof(Int) * 8 - 1);
  U u = static_cast<U>(bits);
  // Negative values count down from -0.
  return (u & kSignBit) ? -static_cast<__int128>(u & ~kSignBit) : static_cast<__int128>(u);
}

template <typename Int>
double ulp_distance(Int a, Int b) {
  __int128 d = ordered(a) - ordered(b);
  return static_cast<double>(d < 0 ? -d : d);
}

std::optional<double> last_value(Store& store, const std::string& uuid, const std::string& key) {
  auto pts = store.metric(uuid, key);
  if (pts.empty()) return std::nullopt;
  return pts.back().value;
}

}  // namespace

TensorDelta compare_tensors(const std::string& name, const void* a, const void* b, int64_t elements,
                            bool is_double) {
  TensorDelta d;
  d.name = name;
  d.elements = elements;
  for (int64_t i = 0; i < elements; ++i) {
    double va, vb, ulp;
    bool same_bits;
    if (is_double) {
      double x = static_cast<const double*>(a)[i], y = static_cast<const double*>(b)[i];
      auto bx = std::bit_cast<int64_t>(x), by = std::bit_cast<int64_t>(y);
      same_bits = bx == by;
      va = x, vb = y;
      ulp = ulp_distance(bx, by);
    } else {
      float x = static_cast<const float*>(a)[i], y = static_cast<const float*>(b)[i];
      auto bx = std::bit_cast<int32_t>(x), by = std::bit_cast<int32_t>(y);
      same_bits = bx == by;
      va = x, vb = y;
      ulp = ulp_distance(bx, by);
    }
    if (same_bits) continue;
    ++d.differing;
    double abs = std::fabs(va - vb);
    double scale = std::max(std::fabs(va), std::fabs(vb));
    d.max_abs = std::max(d.max_abs, abs);
    if (scale > 0) d.max_rel = std::max(d.max_rel, abs / scale);
    d.max_ulp = std::max(d.max_ulp, ulp);
  }
  return d;
}

env::Manifest run_manifest(Store& store, const RunInfo& run) {
  env::Manifest m = store.environment(run.uuid);
  for (const auto& [k, v] : store.params(run.uuid)) {
    bool seed = k == "seed" || k.rfind("seeds.", 0) == 0;
    m[(seed ? "seeds." : "config.") + (k.rfind("seeds.", 0) == 0 ? k.substr(6) : k)] = v;
  }
  return m;
}

namespace {

// Loss curves over the steps both runs recorded, and final accuracies.
void compare_curves(Store& store, const RunInfo& a, const RunInfo& b, RunDiff& d) {
  std::map<int64_t, double> la;
  for (const auto& p : store.metric(a.uuid, "train/loss")) la[p.step] = p.value;
  for (const auto& p : store.metric(b.uuid, "train/loss")) {
    auto it = la.find(p.step);
    if (it == la.end()) continue;
    ++d.loss_steps_compared;
    double diff = std::fabs(it->second - p.value);
    if (std::isnan(diff)) diff = std::isnan(it->second) && std::isnan(p.value) ? 0 : INFINITY;
    if (d.max_loss_diff_step < 0 || diff > d.max_loss_diff) {
      d.max_loss_diff = diff;
      d.max_loss_diff_step = p.step;
    }
  }
  d.final_accuracy_a = last_value(store, a.uuid, "test/accuracy");
  d.final_accuracy_b = last_value(store, b.uuid, "test/accuracy");
}

// The first common step whose hashes differ, and the tensors that differ there.
void compare_fingerprints(const FingerprintSet& fa, const FingerprintSet& fb, RunDiff& d) {
  std::map<int64_t, const Fingerprint*> by_step;
  for (const auto& f : fb.steps) by_step[f.step] = &f;
  for (const auto& f : fa.steps) {
    auto it = by_step.find(f.step);
    if (it == by_step.end()) continue;
    ++d.common_steps;
    if (f.hashes == it->second->hashes) continue;
    d.first_diff_step = f.step;
    const auto& other = it->second->hashes;
    for (size_t i = 0; i < fa.names.size() && i < f.hashes.size() && i < other.size(); ++i)
      if (f.hashes[i] != other[i]) d.differing_tensors.push_back(fa.names[i]);
    return;
  }
  d.identical =
      fa.steps.size() == fb.steps.size() && d.common_steps == static_cast<int64_t>(fa.steps.size());
}

}  // namespace

bool is_machine_group(const std::string& g) {
  return g == "hardware" || g == "driver" || g == "libraries" || g == "system" || g == "threads" ||
         g == "flags" || g == "env" || g == "build";
}

std::vector<env::Difference> machine_differences(env::Manifest recorded, env::Manifest here,
                                                 bool here_complete) {
  auto not_machine = [](const auto& kv) {
    return !is_machine_group(kv.first.substr(0, kv.first.find('.'))) ||
           kv.first == "system.hostname";
  };
  std::erase_if(here, not_machine);
  std::erase_if(recorded, [&](const auto& kv) {
    return not_machine(kv) || (!here_complete && !here.count(kv.first));
  });
  return env::diff(recorded, here);
}

RunDiff diff_runs(Store& store, const RunInfo& a, const RunInfo& b) {
  RunDiff d;
  d.a = a.uuid;
  d.b = b.uuid;
  auto pa = store.params(a.uuid), pb = store.params(b.uuid);
  d.model_a = pa.count("model.name") ? pa.at("model.name") : "?";
  d.model_b = pb.count("model.name") ? pb.at("model.name") : "?";
  d.same_model = d.model_a == d.model_b;
  for (auto& x : env::diff(run_manifest(store, a), run_manifest(store, b))) {
    auto& to = x.group == "config" || x.group == "seeds" ? d.config : d.environment;
    to.push_back(std::move(x));
  }
  compare_curves(store, a, b, d);
  FingerprintSet fa = fingerprint::read(store, a.uuid), fb = fingerprint::read(store, b.uuid);
  d.have_fingerprints = !fa.steps.empty() && !fb.steps.empty();
  d.steps_a = fa.steps.empty() ? 0 : fa.steps.back().step;
  d.steps_b = fb.steps.empty() ? 0 : fb.steps.back().step;
  if (!d.have_fingerprints || !d.same_model) return d;
  for (auto [run, hash] : {std::pair{&a, &d.hash_a}, std::pair{&b, &d.hash_b}}) {
    const auto tags = store.tags(run->uuid);
    const auto it = tags.find("fingerprint.hash");
    *hash = it == tags.end() ? fingerprint::kHostHash : it->second;
  }
  d.same_tensors = fa.names == fb.names && d.hash_a == d.hash_b;
  if (d.same_tensors) compare_fingerprints(fa, fb, d);
  return d;
}

}  // namespace trainscope::repro
