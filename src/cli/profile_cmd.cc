// `trainscope profile CONFIG` and `trainscope profile show RUN`.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/profile/report.h"
#include "trainscope/train/trainer.h"

#include <torch/torch.h>

namespace trainscope::cli {
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

}  // namespace trainscope::cli
