// The spread of weights across a cell's runs, read from their checkpoints.
#include "trainscope/study/weights.h"

#include <torch/torch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/config/config.h"
#include "trainscope/core/util.h"
#include "trainscope/data/data.h"
#include "trainscope/models/models.h"
#include "trainscope/study/report.h"

namespace trainscope::study {

namespace {

// step -> checkpoint file of one run.
std::map<int64_t, std::filesystem::path> checkpoints(store::Store& s, const std::string& run) {
  std::map<int64_t, std::filesystem::path> out;
  for (const auto& a : s.artifacts(run))
    if (a.kind == checkpoint::kCheckpointKind) {
      // step-000000123.pt; a name without its step is not one of the
      // trainer's checkpoints (a damaged store's): left out.
      const auto dash = a.name.rfind('-'), dot = a.name.rfind('.');
      if (dash == std::string::npos || dot == std::string::npos || dot <= dash + 1) continue;
      int64_t step = -1;
      const char* first = a.name.data() + dash + 1;
      const char* last = a.name.data() + dot;
      if (std::from_chars(first, last, step).ptr != last || step < 0) continue;
      store::verify_artifact(a);  // the file recorded, as eval takes one
      out[step] = a.path;
    }
  return out;
}

// Parameters of one checkpoint, flattened per layer (module path), in order.
using Layers = std::vector<std::pair<std::string, torch::Tensor>>;

Layers read_layers(models::Classifier& model, const std::filesystem::path& file) {
  checkpoint::read_checkpoint(file, model, nullptr, nullptr);
  std::vector<std::pair<std::string, std::vector<torch::Tensor>>> groups;
  for (const auto& p : model.named_parameters()) {
    std::string layer = p.key().substr(0, p.key().rfind('.'));
    if (groups.empty() || groups.back().first != layer) groups.push_back({layer, {}});
    groups.back().second.push_back(p.value().detach().flatten().to(torch::kFloat64));
  }
  Layers out;
  std::vector<torch::Tensor> all;
  for (auto& [name, ts] : groups) {
    out.emplace_back(name, torch::cat(ts));
    all.push_back(out.back().second);
  }
  out.emplace_back("(all)", torch::cat(all));
  return out;
}

WeightSpread spread(const std::string& cell, int64_t step, const std::string& layer,
                    const std::vector<torch::Tensor>& runs) {
  torch::Tensor m = torch::stack(runs);  // runs x elements
  WeightSpread w{cell, step, layer, static_cast<int>(runs.size())};
  w.mean_sd = m.std(0, /*unbiased=*/true).mean().item<double>();
  w.cos_min = 2, w.cos_max = -2;
  int pairs = 0;
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = i + 1; j < runs.size(); ++j, ++pairs) {
      double c = torch::cosine_similarity(runs[i], runs[j], 0).item<double>();
      w.cos_min = std::min(w.cos_min, c), w.cos_max = std::max(w.cos_max, c);
      w.cos_mean += c;
    }
  w.cos_mean /= pairs;
  return w;
}

// The architecture a run trained: its model.* settings, dtype and data,
// which decide the model's shapes (a grid may vary model.hidden).
std::string architecture(const std::map<std::string, std::string>& flat) {
  std::string key;
  for (const auto& [k, v] : flat)
    if (k.rfind("model.", 0) == 0 || k.rfind("data.", 0) == 0 || k == "compute.dtype")
      key += k + "=" + v + "\n";
  return key;
}

}  // namespace

std::vector<WeightSpread> weight_spread(store::Store& s, const StudyAnalysis& a) {
  std::vector<WeightSpread> out;
  // A command study's runs are a script's: no trainer config, no checkpoints.
  if (!a.spec.command.empty()) return out;
  // One model per architecture (cells of a grid over model.hidden differ).
  std::map<std::string, std::shared_ptr<models::Classifier>> models;
  for (const auto& c : a.cells) {
    if (c.run_uuids.size() < 2) continue;
    std::vector<std::map<int64_t, std::filesystem::path>> files;
    for (const auto& r : c.run_uuids) files.push_back(checkpoints(s, r));
    if (files[0].empty()) continue;  // nothing to compare (or to build a model for)
    auto run = s.find_run(c.run_uuids[0]);
    store::verify_config(*run);  // the model is built from it
    config::Config cfg =
        config::parse_config(run->config_text, {}, "run " + core::short_uuid(run->uuid));
    auto& model = models[architecture(config::flatten(cfg))];
    if (!model) {
      model = models::make_model(cfg.model, models::shape_of(cfg.data),
                                 at::detail::createCPUGenerator(0));
      model->to(data::dtype_of(cfg));
    }
    for (const auto& [step, _] : files[0]) {
      if (!std::all_of(files.begin(), files.end(), [&](auto& f) { return f.count(step); }))
        continue;
      std::vector<Layers> runs;
      for (auto& f : files) runs.push_back(read_layers(*model, f[step]));
      for (size_t l = 0; l < runs[0].size(); ++l) {
        std::vector<torch::Tensor> per_run;
        for (auto& r : runs) per_run.push_back(r[l].second);
        out.push_back(spread(c.cell, step, runs[0][l].first, per_run));
        out.back().last_layer = l + 2 == runs[0].size();
      }
    }
  }
  return out;
}

}  // namespace trainscope::study
