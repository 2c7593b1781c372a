#include "trainscope/replay/replay.h"

#include <torch/torch.h>

#include <algorithm>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/fingerprint/config.h"
#include "trainscope/fingerprint/fingerprint.h"
#include "trainscope/fingerprint/records.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace fs = std::filesystem;

namespace trainscope::replay {
using core::ErrorKind;
using core::fail;
using repro::RunDiff;
using store::RunInfo;
using store::Store;

namespace {

using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

int64_t checkpoint_step(const std::string& name) {
  auto dash = name.rfind("step-");
  if (dash == std::string::npos) return -1;
  try {
    return std::stoll(name.substr(dash + 5));
  } catch (const std::exception&) {
    return -1;
  }
}

// Replays `config_text` from `checkpoint` up to `to_step` in a scratch
// in-memory store; returns the tensors a fingerprint hashes.
Tensors replay_steps(const std::string& config_text, const fs::path& checkpoint, int64_t to_step) {
  config::Config cfg = config::parse_config(config_text, {}, "recorded config");
  cfg.train.max_steps = to_step;
  cfg.checkpoint.every_epochs = 0;
  cfg.checkpoint.every_steps = 0;
  cfg.section<fingerprint::FingerprintConfig>().every_steps = 0;
  std::shared_ptr<Store> scratch = Store::open({.uri = "sqlite::memory:"});
  train::Trainer t(cfg, scratch,
                   {.init_checkpoint = checkpoint.string(), .record_environment = false});
  t.run();
  Tensors out = fingerprint::tensors(*t.model());
  for (auto& [n, tensor] : out) tensor = tensor.detach().clone();
  return out;
}

// The last checkpoint of run `a` before `step`.
std::optional<store::ArtifactInfo> checkpoint_before(Store& store, const RunInfo& a, int64_t step) {
  std::optional<store::ArtifactInfo> ck;
  int64_t best = -1;
  for (const auto& art : store.artifacts(a.uuid)) {
    const int64_t s = checkpoint_step(art.name);
    if (art.kind == "checkpoint" && s >= 0 && s < step && s > best) {
      ck = art;
      best = s;
    }
  }
  return ck;
}

// The recorded hashes of `uuid` at `step`.
std::vector<uint64_t> hashes_at(Store& store, const std::string& uuid, int64_t step) {
  for (const auto& f : fingerprint::read(store, uuid).steps)
    if (f.step == step) return f.hashes;
  return {};
}

// The hashes a run's fingerprints hold for `ts`: on a GPU the device hash
// (fingerprint.h), on the CPU xxh3-64.
std::vector<uint64_t> recorded_hashes(const Tensors& ts) {
  if (ts.empty() || ts.front().second.is_cpu()) {
    std::vector<uint64_t> out;
    for (const auto& [name, t] : ts) out.push_back(fingerprint::tensor_hash(t));
    return out;
  }
  std::vector<torch::Tensor> list;
  for (const auto& [name, t] : ts) list.push_back(t);
  return fingerprint::DeviceHasher()(list);
}

// Element-wise differences of the replayed tensors; whether the replay
// reproduced the recorded hashes of both runs.
bool compare_replays(const Tensors& ta, const Tensors& tb, const std::vector<uint64_t>& ha,
                     const std::vector<uint64_t>& hb, RunDiff& d) {
  bool reproduced = ta.size() + 1 == ha.size() && ha.size() == hb.size();
  if (reproduced) {
    const auto a = recorded_hashes(ta), b = recorded_hashes(tb);
    reproduced =
        std::equal(a.begin(), a.end(), ha.begin()) && std::equal(b.begin(), b.end(), hb.begin());
  }
  for (size_t i = 0; i < ta.size() && i < tb.size(); ++i) {
    const auto& [name, x] = ta[i];
    const auto& y = tb[i].second;
    if (!x.is_floating_point()) continue;
    if (x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes()) continue;
    // Compared where the CPU reads them (a replay on a GPU leaves them there).
    auto xc = x.to(torch::kCPU).contiguous(), yc = y.to(torch::kCPU).contiguous();
    if (fingerprint::tensor_hash(xc) == fingerprint::tensor_hash(yc)) continue;
    d.deltas.push_back(repro::compare_tensors(name, xc.data_ptr(), yc.data_ptr(), xc.numel(),
                                              xc.scalar_type() == torch::kFloat64));
  }
  return reproduced;
}

}  // namespace

void replay_divergence(Store& store, const RunInfo& a, const RunInfo& b, RunDiff& d) {
  if (d.first_diff_step < 0) return;
  for (const RunInfo* r : {&a, &b})
    if (auto tags = store.tags(r->uuid);
        tags.count("model.custom") && tags["model.custom"] == "true") {
      d.replay_note = fmt::format(
          "run {} trained a model of its own, which a replay cannot build; the fingerprints above "
          "say where the runs part",
          core::short_uuid(r->uuid));
      return;
    }
  for (const RunInfo* r : {&a, &b})
    if (auto tags = store.tags(r->uuid); tags.count("dist.world_size")) {
      d.replay_note = fmt::format(
          "run {} trained on {} ranks, which a replay in one process cannot repeat; the "
          "fingerprints above say where the runs part",
          core::short_uuid(r->uuid), tags["dist.world_size"]);
      return;
    }
  // The last checkpoint of a before the divergence holds a state that b
  // shared bit for bit (their fingerprints agree up to then).
  auto ck = checkpoint_before(store, a, d.first_diff_step);
  if (!ck) {
    d.replay_note = fmt::format(
        "no checkpoint of run {} before step {}; record one with checkpoint.every_steps to get "
        "numeric differences",
        core::short_uuid(a.uuid), d.first_diff_step);
    return;
  }
  // Each replays under its recorded config: one changed in the store since
  // would replay another training (store::verify_config).
  store::verify_config(a);
  store::verify_config(b);
  // The checkpoint as eval and weights take one: the file recorded (its
  // size and SHA-256), never another run's put in its place, nor a FIFO.
  store::verify_artifact(*ck);
  d.replay_from = checkpoint_step(ck->name);
  core::log_info("replaying steps {}..{} of both runs from {}", *d.replay_from + 1,
                 d.first_diff_step, ck->name);
  Tensors ta = replay_steps(a.config_text, ck->path, d.first_diff_step);
  Tensors tb = replay_steps(b.config_text, ck->path, d.first_diff_step);
  d.replay_reproduced = compare_replays(ta, tb, hashes_at(store, a.uuid, d.first_diff_step),
                                        hashes_at(store, b.uuid, d.first_diff_step), d);
  if (!d.replay_reproduced)
    d.replay_note =
        "the replay did not reproduce the recorded fingerprints (this machine or its settings "
        "differ from the recording); differences shown are the replay's";
}

}  // namespace trainscope::replay
