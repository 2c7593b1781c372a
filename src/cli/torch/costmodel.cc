// costmodel fit, predict, eval.
#include "trainscope/profile/costmodel.h"

#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "../output.h"
#include "torch_cli.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/svg.h"
#include "trainscope/format/format.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli::torch_cli {
using core::ErrorKind;
using core::fail;

namespace {

// The input shape of a config's dataset, without reading the data.
train::ModelShape shape_of_config(const train::Config& cfg) {
  train::ModelShape shape;
  if (cfg.data.dataset.rfind("cifar", 0) == 0)
    shape = {3, 32, 32, cfg.data.dataset == "cifar100" ? 100 : 10};
  if (cfg.data.dataset == "synthetic")
    shape = {cfg.data.synthetic.channels, cfg.data.synthetic.height, cfg.data.synthetic.width,
             cfg.data.synthetic.classes};
  return shape;
}

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

void print_prediction(Context& ctx, const profile::CostModel& m, const train::Config& cfg,
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

core::SvgChart eval_chart(const profile::CostModelEval& e) {
  core::SvgChart c;
  c.title = fmt::format("Cost model, leave one architecture out: MAPE {:.1f}% per iteration",
                        e.iteration_mape);
  c.x_label = "measured ms per iteration";
  c.y_label = "predicted ms";
  c.log_x = c.log_y = true;
  double lo = 1e300, hi = 0;
  std::map<std::string, core::SvgSeries> by_model;
  for (const auto& r : e.rows) {
    auto& s = by_model[r.model];
    s.name = r.model;
    s.points = true;
    s.x.push_back(r.measured_us / 1000);
    s.y.push_back(r.predicted_us / 1000);
    lo = std::min({lo, r.measured_us / 1000, r.predicted_us / 1000});
    hi = std::max({hi, r.measured_us / 1000, r.predicted_us / 1000});
  }
  for (auto& [m, s] : by_model) c.series.push_back(std::move(s));
  c.series.push_back({"exact", {lo, hi}, {lo, hi}, true, false});
  c.series.push_back({"-15%", {lo, hi}, {lo * 0.85, hi * 0.85}, true, false});
  c.series.push_back({"+15%", {lo, hi}, {lo * 1.15, hi * 1.15}, true, false});
  return c;
}

std::string error_pct(double predicted, double measured) {
  return fmt::format("{:+.1f}%", (predicted / measured - 1) * 100);
}

void print_eval(const profile::CostModelEval& e, const std::vector<profile::ProfiledArch>& data,
                bool with_layers) {
  Table t({"HELD-OUT MODEL", "BATCH", "MEASURED ms", "PREDICTED ms", "ERROR"});
  for (size_t c = 1; c < 5; ++c) t.align_right(c);
  for (const auto& r : e.rows)
    t.add_row({r.model, std::to_string(r.batch), fmt::format("{:.2f}", r.measured_us / 1000),
               fmt::format("{:.2f}", r.predicted_us / 1000),
               error_pct(r.predicted_us, r.measured_us)});
  t.print(std::cout);
  if (with_layers) {
    Table lt({"HELD-OUT MODEL", "BATCH", "LAYER", "TYPE", "MEASURED us", "PREDICTED us", "ERROR"});
    for (size_t c : {1, 4, 5, 6}) lt.align_right(c);
    for (const auto& r : e.layer_rows)
      lt.add_row({r.model, std::to_string(r.batch), r.layer, r.type,
                  fmt::format("{:.1f}", r.measured_us), fmt::format("{:.1f}", r.predicted_us),
                  error_pct(r.predicted_us, r.measured_us)});
    std::cout << "\n";
    lt.print(std::cout);
  }
  std::set<std::string> archs;
  std::set<int64_t> batches;
  for (const auto& a : data) archs.insert(a.model), batches.insert(a.batch);
  std::cout << fmt::format(
      "leave-one-architecture-out MAPE over {} architectures x {} batch sizes: per iteration "
      "{:.1f}%, per layer {:.1f}% ({} layers taking >= 1% of their iteration)\n",
      archs.size(), batches.size(), e.iteration_mape, e.layer_mape, e.layer_rows.size());
}

}  // namespace

void costmodel_fit(Context& ctx, const CostmodelArgs& a) {
  auto data = profile::load_profiled(*ctx.reader(), a.runs);
  auto m = profile::fit(data, env::simd_float_lanes());
  write_output(a.model_file, [&](std::ostream& o) { o << m.to_json() << "\n"; });
  std::set<std::string> archs;
  size_t n_runs = 0;
  for (const auto& d : data) {
    archs.insert(d.model);
    n_runs += d.runs.size();
  }
  std::cout << fmt::format(
      "fitted {} layer types on {} layers of {} runs ({} configurations, {} architectures, "
      "{}-float vectors); wrote {}\n",
      m.coef.size(), m.samples, n_runs, data.size(), archs.size(), m.lanes, a.model_file);
}

void costmodel_predict(Context& ctx, const CostmodelArgs& a) {
  std::ifstream in(a.model_file);
  if (!in)
    fail(ErrorKind::kNotFound, "no cost model at '{}'; run `trainscope costmodel fit` first",
         a.model_file);
  std::stringstream ss;
  ss << in.rdbuf();
  profile::CostModel m;
  core::check_json_nesting(ss.str(), a.model_file);
  try {
    m = profile::CostModel::from_json(ss.str());
  } catch (const core::Error& e) {
    throw core::Error(
        fmt::format("{}: {} (`trainscope costmodel fit` writes a new one)", a.model_file, e.what()),
        e.kind());
  }
  train::Config cfg = train::load_config(a.config, a.sets);
  if (a.batch < 0 || a.batch > (1 << 24))
    fail(ErrorKind::kUsage, "--batch must be in [1, 16777216], or 0 for the config's (got {})",
         a.batch);
  const int64_t b = a.batch > 0 ? a.batch : cfg.train.batch_size;
  const train::ModelShape shape = shape_of_config(cfg);
  torch::set_num_threads(train::resolved_threads(cfg));
  std::vector<profile::LayerInfo> layers;
  try {
    auto net = train::make_model(cfg.model, shape, at::detail::createCPUGenerator(0));
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

void costmodel_eval(Context& ctx, const CostmodelArgs& a) {
  auto data = profile::load_profiled(*ctx.reader(), a.runs);
  auto e = profile::leave_one_architecture_out(data, env::simd_float_lanes());
  if (!a.svg.empty()) write_output(a.svg, [&](std::ostream& o) { o << eval_chart(e).render(); });
  if (ctx.json || a.format == "json") {
    std::cout << format::costmodel_eval(e).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else if (a.format == "csv") {
    format::costmodel_eval_csv(std::cout, e);
  } else {
    print_eval(e, data, a.layers);
  }
}

}  // namespace trainscope::cli::torch_cli
