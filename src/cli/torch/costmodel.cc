// costmodel predict: builds the model to describe its layers (libtorch);
// fit and eval read profiles alone (../costmodel_cmd.cc).
#include "trainscope/profile/costmodel.h"

#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "../output.h"
#include "torch_cli.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/svg.h"
#include "trainscope/format/format.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli::torch_cli {
using core::ErrorKind;
using core::fail;

namespace {

void warn_mismatches(const profile::CostModel& m, const std::set<std::string>& unseen) {
  for (const auto& u : unseen)
    core::log_warn(
        "layer type {} was never profiled; its time is an estimate from all layer types (FLOPs, "
        "bytes, params); profile a model that has it and refit for a real figure",
        u);
  if (const int lanes = env::simd_float_lanes(); m.lanes != lanes)
    core::log_warn(
        "the cost model was fitted on a machine with {}-float vectors and this one has {}; "
        "profile a grid here and refit",
        m.lanes, lanes);
  const int64_t threads = torch::get_num_threads();
  if (m.threads > 0 && m.threads != threads)
    core::log_warn(
        "the cost model was fitted on runs with {} thread(s) and this config uses {}; profile a "
        "grid with compute.threads={} and refit",
        m.threads, threads, threads);
}

void print_prediction(Context& ctx, const profile::CostModel& m, const config::Config& cfg,
                      int64_t b, const std::vector<profile::LayerInfo>& layers) {
  Table t({"LAYER", "TYPE", "FWD MFLOP", "PREDICTED us", "NOTE"});
  t.align_right(2);
  t.align_right(3);
  std::set<std::string> unseen;
  nlohmann::json jl = nlohmann::json::array();
  for (const auto& l : layers) {
    bool est = false;
    const double us = m.layer_us(l, &est);
    if (est) unseen.insert(l.type);
    t.add_row({l.name, l.type, fmt::format("{:.2f}", l.flops / 1e6), fmt::format("{:.1f}", us),
               est ? "estimate: type not in the model" : ""});
    jl.push_back({{"layer", l.name},
                  {"type", l.type},
                  {"fwd_mflop", l.flops / 1e6},
                  {"predicted_us", us},
                  {"estimated", est}});
  }
  const double overhead = m.overhead_us(layers);
  t.add_row({"(outside layers)", "", "", fmt::format("{:.1f}", overhead), "data, loss, framework"});
  if (ctx.json) {
    std::cout << nlohmann::json{{"model", cfg.model.name},
                                {"batch", b},
                                {"iteration_ms", m.iteration_us(layers) / 1000},
                                {"outside_layers_ms", overhead / 1000},
                                {"layers", jl}}
                     .dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else {
    t.print(std::cout);
    std::cout << fmt::format("predicted iteration: {:.2f} ms for {} at batch {}\n",
                             m.iteration_us(layers) / 1000, cfg.model.name, b);
  }
  warn_mismatches(m, unseen);
}

}  // namespace

void costmodel_predict(Context& ctx, const CostmodelArgs& a) {
  const std::optional<std::string> text = core::read_regular_file(a.model_file, "cost model");
  if (!text)
    fail(ErrorKind::kNotFound, "no cost model at '{}'; run `trainscope costmodel fit` first",
         a.model_file);
  profile::CostModel m;
  core::check_json_nesting(*text, a.model_file);
  try {
    m = profile::CostModel::from_json(*text);
  } catch (const core::Error& e) {
    throw core::Error(
        fmt::format("{}: {} (`trainscope costmodel fit` writes a new one)", a.model_file, e.what()),
        e.kind());
  }
  config::Config cfg = config::load_config(a.config, a.sets);
  if (a.batch < 0 || a.batch > (1 << 24))
    fail(ErrorKind::kUsage, "--batch must be in [1, 16777216], or 0 for the config's (got {})",
         a.batch);
  const int64_t b = a.batch > 0 ? a.batch : cfg.train.batch_size;
  const models::ModelShape shape = models::shape_of(cfg.data);
  torch::set_num_threads(train::resolved_threads(cfg));
  std::vector<profile::LayerInfo> layers;
  try {
    auto net = models::make_model(cfg.model, shape, at::detail::createCPUGenerator(0));
    layers = profile::describe_layers(
        *net, [&](torch::Tensor x) { return net->forward(x); },
        torch::zeros({b, shape.channels, shape.height, shape.width}));
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    fail(ErrorKind::kUsage,
         "cannot run model '{}' once at batch {} to describe it: {}; lower --batch", cfg.model.name,
         b, what.substr(0, what.find('\n')));
  }
  print_prediction(ctx, m, cfg, b, layers);
}

}  // namespace trainscope::cli::torch_cli
