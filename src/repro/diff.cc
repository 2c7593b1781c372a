#include "trainscope/repro/diff.h"

#include <torch/torch.h>

#include <bit>
#include <cmath>
#include <map>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace fs = std::filesystem;

namespace trainscope::repro {
using core::log_info;
using core::new_uuid;
using store::ArtifactInfo;
using store::Fingerprint;
using store::FingerprintSet;
using store::RunInfo;
using store::Store;
using store::StoreOptions;

namespace {

// Maps IEEE bits to integers that are ordered like the values, so that the
// difference of two mapped values is their distance in ULPs.
template <typename Int>
double ordered(Int bits) {
  using U = std::make_unsigned_t<Int>;
  constexpr U sign = U{1} << (sizeof(Int) * 8 - 1);
  U u = static_cast<U>(bits);
  // Negative values count down from -0.
  return (u & sign) ? -static_cast<double>(u & ~sign) : static_cast<double>(u);
}

std::optional<double> last_value(Store& store, const std::string& uuid, const std::string& key) {
  auto pts = store.metric(uuid, key);
  if (pts.empty()) return std::nullopt;
  return pts.back().value;
}

int64_t checkpoint_step(const std::string& name) {
  auto dash = name.rfind("step-");
  if (dash == std::string::npos) return -1;
  try {
    return std::stoll(name.substr(dash + 5));
  } catch (const std::exception&) {
    return -1;
  }
}

// Replays `cfg` from a checkpoint up to `to_step` in a scratch store and
// returns the tensors a fingerprint hashes, and the loss hash.
std::vector<std::pair<std::string, torch::Tensor>> replay(const std::string& config_text,
                                                          const fs::path& checkpoint,
                                                          int64_t to_step) {
  train::Config cfg = train::parse_config(config_text, {}, "recorded config");
  cfg.max_steps = to_step;
  cfg.checkpoint_every_epochs = 0;
  cfg.checkpoint_every_steps = 0;
  cfg.fingerprint_every_steps = 0;
  fs::path scratch = fs::temp_directory_path() / ("trainscope-replay-" + new_uuid());
  fs::create_directories(scratch);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{scratch};
  StoreOptions so;
  so.uri = "sqlite:" + (scratch / "replay.db").string();
  std::shared_ptr<Store> store = Store::open(so);
  train::TrainOptions o;
  o.init_checkpoint = checkpoint.string();
  o.record_environment = false;
  train::Trainer t(cfg, store, o);
  t.run();
  auto out = train::fingerprint_tensors(*t.model());
  for (auto& [n, tensor] : out) tensor = tensor.detach().clone();
  return out;
}

}  // namespace

TensorDelta compare_tensors(const std::string& name, const void* a, const void* b,
                            int64_t elements, bool is_double) {
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
      ulp = std::fabs(ordered(bx) - ordered(by));
    } else {
      float x = static_cast<const float*>(a)[i], y = static_cast<const float*>(b)[i];
      auto bx = std::bit_cast<int32_t>(x), by = std::bit_cast<int32_t>(y);
      same_bits = bx == by;
      va = x, vb = y;
      ulp = std::fabs(ordered(bx) - ordered(by));
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

RunDiff diff_runs(Store& store, const RunInfo& a, const RunInfo& b, bool do_replay) {
  RunDiff d;
  d.a = a.uuid;
  d.b = b.uuid;
  auto pa = store.params(a.uuid), pb = store.params(b.uuid);
  d.model_a = pa.count("model.name") ? pa.at("model.name") : "?";
  d.model_b = pb.count("model.name") ? pb.at("model.name") : "?";
  d.same_model = d.model_a == d.model_b;
  for (auto& x : env::diff(run_manifest(store, a), run_manifest(store, b))) {
    if (x.group == "config" || x.group == "seeds") {
      d.config.push_back(std::move(x));
    } else {
      d.environment.push_back(std::move(x));
    }
  }

  // Metric curves: compare what both runs have.
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

  FingerprintSet fa = store.fingerprints(a.uuid), fb = store.fingerprints(b.uuid);
  d.have_fingerprints = !fa.steps.empty() && !fb.steps.empty();
  d.steps_a = fa.steps.empty() ? 0 : fa.steps.back().step;
  d.steps_b = fb.steps.empty() ? 0 : fb.steps.back().step;
  if (!d.have_fingerprints || !d.same_model) return d;
  d.same_tensors = fa.names == fb.names;
  if (!d.same_tensors) return d;

  std::map<int64_t, const Fingerprint*> by_step;
  for (const auto& f : fb.steps) by_step[f.step] = &f;
  const Fingerprint* first_a = nullptr;
  const Fingerprint* first_b = nullptr;
  for (const auto& f : fa.steps) {
    auto it = by_step.find(f.step);
    if (it == by_step.end()) continue;
    ++d.common_steps;
    if (f.hashes != it->second->hashes) {
      first_a = &f;
      first_b = it->second;
      break;
    }
  }
  if (!first_a) {
    d.identical = fa.steps.size() == fb.steps.size() && d.common_steps == static_cast<int64_t>(fa.steps.size());
    return d;
  }
  d.first_diff_step = first_a->step;
  for (size_t i = 0; i < fa.names.size(); ++i)
    if (first_a->hashes[i] != first_b->hashes[i]) d.differing_tensors.push_back(fa.names[i]);

  if (!do_replay) return d;
  // The last checkpoint of a before the divergence holds a state that b
  // shared bit for bit (their fingerprints agree up to then).
  std::optional<ArtifactInfo> ck;
  int64_t ck_step = -1;
  for (const auto& art : store.artifacts(a.uuid)) {
    int64_t s = checkpoint_step(art.name);
    if (art.kind == "checkpoint" && s >= 0 && s < d.first_diff_step && s > ck_step) {
      ck = art;
      ck_step = s;
    }
  }
  if (!ck) {
    d.replay_note = fmt::format(
        "no checkpoint of run {} before step {}; record one with checkpoint.every_steps to get "
        "numeric differences",
        a.uuid.substr(0, 8), d.first_diff_step);
    return d;
  }
  d.replay_from = ck_step;
  log_info("replaying steps {}..{} of both runs from {}", ck_step + 1, d.first_diff_step, ck->name);
  auto ta = replay(a.config_text, ck->path, d.first_diff_step);
  auto tb = replay(b.config_text, ck->path, d.first_diff_step);
  bool reproduced = ta.size() + 1 == fa.names.size();
  for (size_t i = 0; i < ta.size() && i < tb.size(); ++i) {
    const auto& [name, x] = ta[i];
    const auto& y = tb[i].second;
    if (reproduced)
      reproduced = train::tensor_hash(x) == first_a->hashes[i] &&
                   train::tensor_hash(y) == first_b->hashes[i];
    if (!x.is_floating_point()) continue;
    if (x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes()) continue;
    auto xc = x.contiguous(), yc = y.contiguous();
    if (train::tensor_hash(xc) == train::tensor_hash(yc)) continue;
    d.deltas.push_back(compare_tensors(name, xc.data_ptr(), yc.data_ptr(), xc.numel(),
                                       xc.scalar_type() == torch::kFloat64));
  }
  d.replay_reproduced = reproduced;
  if (!reproduced)
    d.replay_note = "the replay did not reproduce the recorded fingerprints (this machine or "
                    "its settings differ from the recording); differences shown are the replay's";
  return d;
}

}  // namespace trainscope::repro
