// `trainscope profile CONFIG` and `trainscope profile show RUN`.
#include <csignal>
#include <set>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/profile/costmodel.h"
#include "trainscope/profile/report.h"

#include <yaml-cpp/yaml.h>
#include "trainscope/train/trainer.h"

#include <torch/torch.h>

namespace trainscope::cli {
using core::ErrorKind;
using core::SvgChart;
using core::SvgSeries;
using core::csv_field;
using core::fail;
using core::format_double;
using core::log_info;
using core::log_warn;
using store::RunInfo;
using store::Store;

namespace {

double mean_of(Store& store, const std::string& uuid, const std::string& key) {
  auto pts = store.metric(uuid, key);
  if (pts.empty()) return NAN;
  double s = 0;
  for (const auto& p : pts) s += p.value;
  return s / static_cast<double>(pts.size());
}

void show(Store& store, const RunInfo& run, const std::string& format, bool json,
          const std::string& trace_out, const std::string& svg_out) {
  auto s = profile::summarize(store, run.uuid);
  if (s.iterations == 0)
    fail(ErrorKind::kNotFound,
         "run {} has no profile; record one with `trainscope profile CONFIG` or profile.enabled: true",
         run.uuid.substr(0, 8));
  const double peak = profile::peak_gflops();
  const double prof_ms = mean_of(store, run.uuid, "profile/step_ms_profiled");
  const double unprof_ms = mean_of(store, run.uuid, "profile/step_ms_unprofiled");
  double layers_total = 0;
  for (const auto& l : s.layers) layers_total += l.total();
  std::vector<profile::LayerTime> sorted = s.layers;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.total() > b.total(); });
  auto gflops = [](double flops, double us) { return us > 0 ? flops / us / 1e3 : 0.0; };

  if (json || format == "json") {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : s.layers)
      layers.push_back({{"layer", l.layer},       {"type", l.type},
                        {"forward_us", l.forward_us}, {"backward_us", l.backward_us},
                        {"update_us", l.update_us},   {"forward_flops", l.flops},
                        {"forward_gflops_per_s", gflops(l.flops, l.forward_us)}});
    std::cout << nlohmann::json{{"run", run.uuid},
                                {"profiled_iterations", s.iterations},
                                {"wall_us", s.wall_us},
                                {"coverage_min", s.coverage_min},
                                {"coverage_mean", s.coverage_mean},
                                {"categories_us", s.categories},
                                {"step_ms_profiled", prof_ms},
                                {"step_ms_unprofiled", unprof_ms},
                                {"peak_gflops", peak},
                                {"layers", layers}}
                     .dump(2)
              << "\n";
  } else if (format == "csv") {
    std::cout << "layer,type,forward_us,backward_us,update_us,forward_flops,forward_gflops_per_s\n";
    for (const auto& l : s.layers)
      std::cout << csv_field(l.layer) << "," << l.type << "," << format_double(l.forward_us) << ","
                << format_double(l.backward_us) << "," << format_double(l.update_us) << ","
                << format_double(l.flops) << "," << format_double(gflops(l.flops, l.forward_us)) << "\n";
    for (const auto& [k, v] : s.categories) std::cout << csv_field(k) << ",,," << format_double(v) << ",,,\n";
  } else {
    std::cout << fmt::format(
        "run {}: {} profiled iterations, mean wall {:.2f} ms, coverage min {:.1f}% mean {:.1f}%\n",
        run.uuid.substr(0, 8), s.iterations, s.wall_us / 1000, s.coverage_min * 100,
        s.coverage_mean * 100);
    Table t({"LAYER", "TYPE", "FWD us", "BWD us", "UPD us", "SHARE", "BWD/FWD", "GFLOP/s", "% PEAK"});
    for (size_t c = 2; c < 9; ++c) t.align_right(c);
    for (const auto& l : sorted) {
      double g = gflops(l.flops, l.forward_us);
      t.add_row({l.layer, l.type, fmt::format("{:.1f}", l.forward_us), fmt::format("{:.1f}", l.backward_us),
                 fmt::format("{:.1f}", l.update_us), fmt::format("{:.1f}%", l.total() / s.wall_us * 100),
                 l.forward_us > 0 ? fmt::format("{:.2f}", l.backward_us / l.forward_us) : "-",
                 l.flops > 0 ? fmt::format("{:.2f}", g) : "-",
                 l.flops > 0 && peak > 0 ? fmt::format("{:.1f}%", g / peak * 100) : "-"});
    }
    t.print(std::cout);
    std::cout << "\n";
    Table c({"OTHER CATEGORY", "us", "SHARE"});
    c.align_right(1);
    c.align_right(2);
    c.add_row({"all layers", fmt::format("{:.1f}", layers_total), fmt::format("{:.1f}%", layers_total / s.wall_us * 100)});
    for (const auto& [k, v] : s.categories)
      c.add_row({k, fmt::format("{:.1f}", v), fmt::format("{:.1f}%", v / s.wall_us * 100)});
    c.print(std::cout);
    std::cout << fmt::format(
        "\npeak float32 GEMM on this machine: {:.1f} GFLOP/s ({} threads)\n"
        "profiler overhead: profiled steps {:.2f} ms vs unprofiled {:.2f} ms ({:+.1f}%)\n",
        peak, torch::get_num_threads(), prof_ms, unprof_ms, (prof_ms / unprof_ms - 1) * 100);
  }
  if (!trace_out.empty()) {
    bool found = false;
    for (const auto& a : store.artifacts(run.uuid))
      if (a.kind == "trace") {
        std::filesystem::copy_file(a.path, trace_out, std::filesystem::copy_options::overwrite_existing);
        found = true;
        break;
      }
    if (!found) fail(ErrorKind::kNotFound, "run {} has no trace artifact", run.uuid.substr(0, 8));
    log_info("wrote {} (open in chrome://tracing or ui.perfetto.dev)", trace_out);
  }
  if (!svg_out.empty()) {
    write_output(svg_out, [&](std::ostream& o) {
      o << profile::layer_chart_svg(s, "Time per layer and phase — run " + run.uuid.substr(0, 8));
    });
    log_info("wrote {}", svg_out);
  }
}

}  // namespace

void register_profile_commands(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "profile", "Per-layer forward/backward/update time that accounts for the whole iteration");
  auto path = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto steps = std::make_shared<int64_t>(60);
  auto every = std::make_shared<int64_t>(0);
  auto name = std::make_shared<std::string>();
  cmd->add_option("CONFIG", *path, "YAML config to train and profile");
  cmd->add_option("--set", *sets, "Override a config key");
  cmd->add_option("--steps", *steps, "Train this many steps (default 60)");
  cmd->add_option("--every", *every, "Profile every Nth step after the warm-up (default: profile.every)");
  cmd->add_option("--name", *name, "Run name");
  set_example(cmd, "trainscope profile configs/alexnet_mini.yaml --steps 60 && trainscope profile show alexnet_mini");
  cmd->callback([&ctx, cmd, path, sets, steps, every, name] {
    if (!cmd->get_subcommands().empty()) return;
    if (path->empty()) fail(ErrorKind::kUsage, "give a CONFIG to profile, or `profile show RUN`");
    auto overrides = *sets;
    overrides.push_back("profile.enabled=true");
    overrides.push_back("max_steps=" + std::to_string(*steps));
    if (*every > 0) overrides.push_back("profile.every=" + std::to_string(*every));
    train::Config cfg = train::load_config(*path, overrides);
    if (*steps <= cfg.profile_warmup_steps)
      fail(ErrorKind::kUsage,
           "--steps {} is not more than profile.warmup_steps = {}: nothing would be profiled; "
           "train longer or --set profile.warmup_steps=N",
           *steps, cfg.profile_warmup_steps);
    cfg.epochs = std::max<int64_t>(cfg.epochs, 1);
    train::TrainOptions o;
    o.name = name->empty() ? std::filesystem::path(*path).stem().string() + "-profile" : *name;
    o.command_line = ctx.argv_line;
    o.config_path = *path;
    train::Trainer trainer(cfg, ctx.store(), o);
    auto r = trainer.run();
    auto store = ctx.store();
    show(*store, *store->find_run(r.run_uuid), "table", ctx.json, "", "");
  });
  // profile grid
  {
    auto* grid = cmd->add_subcommand("grid", "Profile models x batch sizes (feeds the cost model)");
    auto file = std::make_shared<std::string>();
    grid->add_option("GRID", *file, "Grid YAML, e.g. configs/profile_grid.yaml")->required();
    set_example(grid, "trainscope profile grid configs/profile_grid.yaml");
    grid->callback([&ctx, file] {
      YAML::Node g;
      try {
        g = YAML::LoadFile(*file);
      } catch (const YAML::Exception& e) {
        fail(ErrorKind::kUsage, "{}: {}", *file, e.what());
      }
      std::filesystem::path base = std::filesystem::path(*file).parent_path() / g["base"].as<std::string>("demo.yaml");
      auto models = g["models"].as<std::vector<std::string>>();
      auto batches = g["batch_sizes"].as<std::vector<int64_t>>();
      int64_t grid_steps = g["steps"].as<int64_t>(16);
      // Repeats run round-robin (every model once, then again), so a slow
      // spell of a shared machine hits all models alike; the cost model takes
      // the median over repeats.
      int64_t repeats = g["repeats"].as<int64_t>(1);
      if (repeats < 1) fail(ErrorKind::kUsage, "{}: repeats must be at least 1 (got {})", *file, repeats);
      auto extra = g["set"] ? g["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
      const size_t total = models.size() * batches.size() * static_cast<size_t>(repeats);
      size_t done = 0;
      for (int64_t rep = 1; rep <= repeats; ++rep)
        for (const auto& m : models)
          for (int64_t b : batches) {
            // Timing needs no full test-set evaluation (10,000 images through
            // VGG is minutes); the grid's own `set:` list may override this.
            std::vector<std::string> o = {"data.test_subset=500"};
            o.insert(o.end(), extra.begin(), extra.end());
            o.insert(o.end(), {"model.name=" + m, "batch_size=" + std::to_string(b), "profile.enabled=true",
                               "max_steps=" + std::to_string(grid_steps), "experiment=profile_grid",
                               "checkpoint.every_epochs=0", "fingerprint.every_steps=0"});
            train::Config cfg = train::load_config(base.string(), o);
            train::TrainOptions to;
            to.name = repeats > 1 ? fmt::format("grid-{}-b{}-r{}", m, b, rep) : fmt::format("grid-{}-b{}", m, b);
            to.command_line = ctx.argv_line;
            log_info("[{}/{}] profiling {} at batch {}{}...", ++done, total, m, b,
                     repeats > 1 ? fmt::format(" (repeat {})", rep) : std::string());
            train::Trainer t(cfg, ctx.store(), to);
            auto r = t.run();
            auto s = profile::summarize(*ctx.store(), r.run_uuid);
            log_info("        {:.1f} ms per iteration, coverage {:.1f}%", s.wall_us / 1000, s.coverage_min * 100);
          }
    });
  }
  auto* sh = cmd->add_subcommand("show", "Show a run's profile: sorted table, categories, overhead");
  auto ref = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  auto trace = std::make_shared<std::string>();
  auto svg = std::make_shared<std::string>();
  sh->add_option("RUN", *ref, "Run")->required();
  sh->add_option("--format,-f", *format, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
  sh->add_option("--trace", *trace, "Write the Chrome trace JSON of the first profiled iteration here");
  sh->add_option("--svg", *svg, "Write a chart of time per layer split by phase here");
  set_example(sh, "trainscope profile show alexnet_mini-profile --svg layers.svg --trace trace.json");
  sh->callback([&ctx, ref, format, trace, svg] {
    auto store = ctx.store();
    show(*store, store->resolve_run(*ref), *format, ctx.json, *trace, *svg);
  });
}

void register_costmodel_commands(CLI::App& app, Context& ctx) {
  auto* cm = app.add_subcommand("costmodel", "Predict training time from a network's structure");
  cm->require_subcommand(1);
  set_example(cm, "trainscope costmodel fit && trainscope costmodel predict configs/vgg11.yaml --batch 64");
  auto model_file = std::make_shared<std::string>("trainscope-costmodel.json");
  // fit
  {
    auto* fit = cm->add_subcommand("fit", "Fit per-layer-type regressions on profiled runs");
    auto runs = std::make_shared<std::vector<std::string>>();
    fit->add_option("RUNS", *runs, "Profiled runs (default: every profiled run in the store)");
    fit->add_option("--out,-o", *model_file, "Where to write the model");
    set_example(fit, "trainscope costmodel fit --out costmodel.json");
    fit->callback([&ctx, runs, model_file] {
      auto data = profile::load_profiled(*ctx.store(), *runs);
      auto m = profile::fit(data, env::simd_float_lanes());
      write_output(*model_file, [&](std::ostream& o) { o << m.to_json() << "\n"; });
      std::set<std::string> archs;
      size_t n_runs = 0;
      for (const auto& a : data) {
        archs.insert(a.model);
        n_runs += a.runs.size();
      }
      std::cout << fmt::format(
          "fitted {} layer types on {} layers of {} runs ({} configurations, {} architectures, "
          "{}-float vectors); wrote {}\n",
          m.coef.size(), m.samples, n_runs, data.size(), archs.size(), m.lanes, *model_file);
    });
  }
  // predict
  {
    auto* pr = cm->add_subcommand("predict", "Predict per-layer and per-iteration time without training");
    auto path = std::make_shared<std::string>();
    auto batch = std::make_shared<int64_t>(0);
    auto sets = std::make_shared<std::vector<std::string>>();
    pr->add_option("CONFIG", *path, "Config whose model to predict")->required();
    pr->add_option("--batch", *batch, "Batch size (default: the config's)");
    pr->add_option("--set", *sets, "Override a config key");
    pr->add_option("--model", *model_file, "Cost model file");
    set_example(pr, "trainscope costmodel predict configs/vgg11_seed.yaml --batch 64");
    pr->callback([&ctx, path, batch, sets, model_file] {
      std::ifstream in(*model_file);
      if (!in) fail(ErrorKind::kNotFound, "no cost model at '{}'; run `trainscope costmodel fit` first", *model_file);
      std::stringstream ss;
      ss << in.rdbuf();
      auto m = profile::CostModel::from_json(ss.str());
      train::Config cfg = train::load_config(*path, *sets);
      const int64_t b = *batch > 0 ? *batch : cfg.batch_size;
      train::ModelShape shape;
      if (cfg.data.dataset.rfind("cifar", 0) == 0) shape = {3, 32, 32, cfg.data.dataset == "cifar100" ? 100 : 10};
      if (cfg.data.dataset == "synthetic")
        shape = {cfg.data.synthetic_channels, cfg.data.synthetic_height, cfg.data.synthetic_width, cfg.data.synthetic_classes};
      if (cfg.threads > 0) torch::set_num_threads(static_cast<int>(cfg.threads));
      auto net = train::make_model(cfg.model, shape, at::detail::createCPUGenerator(0));
      auto layers = profile::describe_layers(*net, [&](torch::Tensor x) { return net->forward(x); },
                                             torch::zeros({b, shape.channels, shape.height, shape.width}));
      Table t({"LAYER", "TYPE", "FWD MFLOP", "PREDICTED us", "NOTE"});
      t.align_right(2);
      t.align_right(3);
      std::set<std::string> unseen;
      nlohmann::json jl = nlohmann::json::array();
      for (const auto& l : layers) {
        bool est = false;
        double us = m.layer_us(l, &est);
        if (est) unseen.insert(l.type);
        t.add_row({l.name, l.type, fmt::format("{:.2f}", l.flops / 1e6), fmt::format("{:.1f}", us),
                   est ? "estimate: type not in the model" : ""});
        jl.push_back({{"layer", l.name}, {"type", l.type}, {"fwd_mflop", l.flops / 1e6},
                      {"predicted_us", us}, {"estimated", est}});
      }
      const double overhead = m.overhead_us(layers);
      t.add_row({"(outside layers)", "", "", fmt::format("{:.1f}", overhead), "data, loss, framework"});
      if (ctx.json) {
        std::cout << nlohmann::json{{"model", cfg.model.name}, {"batch", b},
                                    {"iteration_ms", m.iteration_us(layers) / 1000},
                                    {"outside_layers_ms", overhead / 1000}, {"layers", jl}}.dump(2) << "\n";
      } else {
        t.print(std::cout);
        std::cout << fmt::format("predicted iteration: {:.2f} ms for {} at batch {}\n",
                                 m.iteration_us(layers) / 1000, cfg.model.name, b);
      }
      for (const auto& u : unseen)
        log_warn("layer type {} was never profiled; its time is an estimate from all layer types "
                 "(FLOPs, bytes, params); profile a model that has it and refit for a real figure", u);
      if (const int lanes = env::simd_float_lanes(); m.lanes != lanes)
        log_warn("the cost model was fitted on a machine with {}-float vectors and this one has {}; "
                 "profile a grid here and refit", m.lanes, lanes);
      const int64_t threads = torch::get_num_threads();
      if (m.threads > 0 && m.threads != threads)
        log_warn("the cost model was fitted on runs with {} thread(s) and this config uses {}; "
                 "profile a grid with threads={} and refit", m.threads, threads, threads);
    });
  }
  // eval
  {
    auto* ev = cm->add_subcommand("eval", "Leave-one-architecture-out MAPE of the cost model");
    auto runs = std::make_shared<std::vector<std::string>>();
    auto format = std::make_shared<std::string>("table");
    auto svg = std::make_shared<std::string>();
    auto layers = std::make_shared<bool>(false);
    ev->add_option("RUNS", *runs, "Profiled runs (default: all)");
    ev->add_option("--format,-f", *format, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}));
    ev->add_flag("--layers", *layers, "Also list every layer's measured and predicted time");
    ev->add_option("--svg", *svg, "Write a predicted-vs-measured scatter plot (log-log) here");
    set_example(ev, "trainscope costmodel eval --svg costmodel-eval.svg");
    ev->callback([&ctx, runs, format, svg, layers] {
      auto data = profile::load_profiled(*ctx.store(), *runs);
      auto e = profile::leave_one_architecture_out(data, env::simd_float_lanes());
      if (!svg->empty()) {
        SvgChart c;
        c.title = fmt::format("Cost model, leave one architecture out: MAPE {:.1f}% per iteration",
                              e.iteration_mape);
        c.x_label = "measured ms per iteration";
        c.y_label = "predicted ms";
        c.log_x = c.log_y = true;
        double lo = 1e300, hi = 0;
        std::map<std::string, SvgSeries> by_model;
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
        write_output(*svg, [&](std::ostream& o) { o << c.render(); });
      }
      if (ctx.json || *format == "json") {
        nlohmann::json rows = nlohmann::json::array(), lrows = nlohmann::json::array();
        for (const auto& r : e.rows)
          rows.push_back({{"model", r.model}, {"batch", r.batch}, {"measured_ms", r.measured_us / 1000},
                          {"predicted_ms", r.predicted_us / 1000}});
        for (const auto& r : e.layer_rows)
          lrows.push_back({{"model", r.model}, {"batch", r.batch}, {"layer", r.layer}, {"type", r.type},
                           {"measured_us", r.measured_us}, {"predicted_us", r.predicted_us}});
        std::cout << nlohmann::json{{"iteration_mape_percent", e.iteration_mape},
                                    {"layer_mape_percent", e.layer_mape},
                                    {"rows", rows},
                                    {"layers", lrows}}
                         .dump(2)
                  << "\n";
        return;
      }
      if (*format == "csv") {
        std::cout << "level,model,batch,layer,type,measured_us,predicted_us,error_percent\n";
        for (const auto& r : e.rows)
          std::cout << fmt::format("iteration,{},{},,,{:.3f},{:.3f},{:.2f}\n", r.model, r.batch, r.measured_us,
                                   r.predicted_us, (r.predicted_us / r.measured_us - 1) * 100);
        for (const auto& r : e.layer_rows)
          std::cout << fmt::format("layer,{},{},{},{},{:.3f},{:.3f},{:.2f}\n", r.model, r.batch, r.layer, r.type,
                                   r.measured_us, r.predicted_us, (r.predicted_us / r.measured_us - 1) * 100);
        return;
      }
      Table t({"HELD-OUT MODEL", "BATCH", "MEASURED ms", "PREDICTED ms", "ERROR"});
      for (size_t c = 1; c < 5; ++c) t.align_right(c);
      for (const auto& r : e.rows)
        t.add_row({r.model, std::to_string(r.batch), fmt::format("{:.2f}", r.measured_us / 1000),
                   fmt::format("{:.2f}", r.predicted_us / 1000),
                   fmt::format("{:+.1f}%", (r.predicted_us / r.measured_us - 1) * 100)});
      t.print(std::cout);
      if (*layers) {
        Table lt({"HELD-OUT MODEL", "BATCH", "LAYER", "TYPE", "MEASURED us", "PREDICTED us", "ERROR"});
        for (size_t c : {1, 4, 5, 6}) lt.align_right(c);
        for (const auto& r : e.layer_rows)
          lt.add_row({r.model, std::to_string(r.batch), r.layer, r.type, fmt::format("{:.1f}", r.measured_us),
                      fmt::format("{:.1f}", r.predicted_us),
                      fmt::format("{:+.1f}%", (r.predicted_us / r.measured_us - 1) * 100)});
        std::cout << "\n";
        lt.print(std::cout);
      }
      std::set<std::string> archs;
      for (const auto& a : data) archs.insert(a.model);
      std::set<int64_t> batches;
      for (const auto& a : data) batches.insert(a.batch);
      std::cout << fmt::format(
          "leave-one-architecture-out MAPE over {} architectures x {} batch sizes: per iteration {:.1f}%, "
          "per layer {:.1f}% ({} layers taking >= 1% of their iteration)\n",
          archs.size(), batches.size(), e.iteration_mape, e.layer_mape, e.layer_rows.size());
    });
  }
}

}  // namespace trainscope::cli
