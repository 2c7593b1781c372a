// profile, profile grid and profile show (which measures this machine's GEMM peak
// with libtorch); costmodel predict is costmodel.cc, fit and eval the
// torch-free ../costmodel_cmd.cc.
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "../output.h"
#include "torch_cli.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/profile/config.h"
#include "trainscope/profile/costmodel.h"
#include "trainscope/profile/grid.h"
#include "trainscope/profile/json.h"
#include "trainscope/profile/profiler.h"
#include "trainscope/profile/report.h"
#include "trainscope/train/trainer.h"

namespace fs = std::filesystem;

namespace trainscope::cli::torch_cli {
using core::ErrorKind;
using core::fail;

namespace {

void print_layers(const profile::ProfileSummary& s, double peak) {
  std::vector<profile::LayerTime> sorted = s.layers;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.total() > b.total(); });
  Table t({"LAYER", "TYPE", "FWD us", "BWD us", "UPD us", "SHARE", "BWD/FWD", "GFLOP/s", "% PEAK"});
  for (size_t c = 2; c < 9; ++c) t.align_right(c);
  for (const auto& l : sorted) {
    const double g = format::gflops(l.flops, l.forward_us);
    t.add_row({l.layer, l.type, fmt::format("{:.1f}", l.forward_us),
               fmt::format("{:.1f}", l.backward_us), fmt::format("{:.1f}", l.update_us),
               fmt::format("{:.1f}%", l.total() / s.wall_us * 100),
               l.forward_us > 0 ? fmt::format("{:.2f}", l.backward_us / l.forward_us) : "-",
               l.flops > 0 ? fmt::format("{:.2f}", g) : "-",
               l.flops > 0 && peak > 0 ? fmt::format("{:.1f}%", g / peak * 100) : "-"});
  }
  t.print(std::cout);
}

void print_profile(const std::string& uuid, const profile::ProfileSummary& s,
                   const profile::ProfileExtras& x) {
  std::cout << fmt::format(
      "run {}: {} profiled iterations, mean wall {:.2f} ms, coverage min {:.1f}% mean {:.1f}%\n",
      core::short_uuid(uuid), s.iterations, s.wall_us / 1000, s.coverage_min * 100,
      s.coverage_mean * 100);
  print_layers(s, x.peak_gflops);
  std::cout << "\n";
  double layers_total = 0;
  for (const auto& l : s.layers) layers_total += l.total();
  Table c({"OTHER CATEGORY", "us", "SHARE"});
  c.align_right(1);
  c.align_right(2);
  c.add_row({"all layers", fmt::format("{:.1f}", layers_total),
             fmt::format("{:.1f}%", layers_total / s.wall_us * 100)});
  for (const auto& [k, v] : s.categories)
    c.add_row({k, fmt::format("{:.1f}", v), fmt::format("{:.1f}%", v / s.wall_us * 100)});
  c.print(std::cout);
  std::cout << fmt::format("\npeak float32 GEMM on this machine: {:.1f} GFLOP/s ({} threads)\n",
                           x.peak_gflops, torch::get_num_threads());
  // A profile imported from another profiler's trace measured no overhead.
  if (std::isfinite(x.step_ms_profiled) && std::isfinite(x.step_ms_unprofiled))
    std::cout << fmt::format(
        "profiler overhead: profiled steps {:.2f} ms vs unprofiled {:.2f} ms ({:+.1f}%)\n",
        x.step_ms_profiled, x.step_ms_unprofiled,
        (x.step_ms_profiled / x.step_ms_unprofiled - 1) * 100);
}

void copy_trace(store::Store& store, const store::RunInfo& run, const std::string& to) {
  for (const auto& a : store.artifacts(run.uuid))
    if (a.kind == "trace") {
      store::verify_artifact(a);
      write_output(to,
                   [&](std::ostream& o) { o << std::ifstream(a.path, std::ios::binary).rdbuf(); });
      if (written_whole(to))
        core::log_info("wrote {} (open in chrome://tracing or ui.perfetto.dev)", to);
      return;
    }
  fail(ErrorKind::kNotFound, "run {} has no trace artifact", core::short_uuid(run.uuid));
}

void show(store::Store& store, const store::RunInfo& run, const ProfileShowArgs& a, bool json) {
  auto s = profile::summarize(store, run.uuid);
  if (s.iterations == 0)
    fail(ErrorKind::kNotFound,
         "run {} has no profile; record one with `trainscope profile CONFIG` or "
         "profile.enabled: true",
         core::short_uuid(run.uuid));
  // The peak the run measured where it ran (this machine's only for a run
  // that recorded none): GFLOP/s against another machine's peak would mislead.
  const double recorded_peak = profile::mean_metric(store, run.uuid, "profile/peak_gflops");
  const profile::ProfileExtras x{
      profile::mean_metric(store, run.uuid, "profile/step_ms_profiled"),
      profile::mean_metric(store, run.uuid, "profile/step_ms_unprofiled"),
      recorded_peak > 0 ? recorded_peak : profile::peak_gflops()};
  if (json || a.format == "json") {
    std::cout << profile::profile_json(run.uuid, s, x).dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else if (a.format == "csv") {
    profile::profile_csv(std::cout, s);
  } else {
    print_profile(run.uuid, s, x);
  }
  if (!a.trace.empty()) copy_trace(store, run, a.trace);
  if (!a.svg.empty()) {
    write_output(a.svg, [&](std::ostream& o) {
      o << profile::layer_chart_svg(s,
                                    "Time per layer and phase — run " + core::short_uuid(run.uuid));
    });
    if (written_whole(a.svg)) core::log_info("wrote {}", a.svg);
  }
}

}  // namespace

void profile(Context& ctx, const ProfileArgs& a) {
  auto overrides = a.sets;
  overrides.push_back("profile.enabled=true");
  overrides.push_back("train.max_steps=" + std::to_string(a.steps));
  if (a.every > 0) overrides.push_back("profile.every=" + std::to_string(a.every));
  config::Config cfg = config::load_config(a.config, overrides);
  const int64_t warmup = cfg.section<profile::ProfileConfig>().warmup_steps;
  if (a.steps <= warmup)
    fail(ErrorKind::kUsage,
         "--steps {} is not more than profile.warmup_steps = {}: nothing would be profiled; "
         "train longer or --set profile.warmup_steps=N",
         a.steps, warmup);
  cfg.train.epochs = std::max<int64_t>(cfg.train.epochs, 1);
  train::TrainOptions o;
  o.name = a.name;
  o.default_name = fs::path(a.config).stem().string() + "-profile";
  o.command_line = ctx.argv_line;
  o.code_path = a.config;
  // Before the run exists: a config that trains fewer steps than --steps
  // is refused when that leaves none to profile, else profiled as it is.
  o.check_steps = [&cfg, &a](int64_t steps, int64_t batches) {
    profile::check_profiled_steps(cfg, steps, batches);
    if (steps < a.steps)
      core::log_info(
          "this config trains {} step(s) ({} epoch(s) of {} batch(es)), fewer than --steps {}: "
          "profiling those",
          steps, cfg.train.epochs, batches, a.steps);
  };
  train::Trainer trainer(cfg, ctx.store(), o);
  auto r = trainer.run();
  auto store = ctx.store();
  note_recorded_run(*store, r.run_uuid);
  show(*store, *store->find_run(r.run_uuid), {}, ctx.json);
}

void profile_grid(Context& ctx, const std::string& grid_file) {
  profile::GridProgress progress;
  progress.before = [](size_t i, size_t n, const profile::GridCell& c) {
    core::log_info("[{}/{}] profiling {} at batch {}{}...", i, n, c.model, c.batch,
                   c.repeated ? fmt::format(" (repeat {})", c.repeat) : std::string());
  };
  progress.after = [](size_t, size_t, const profile::GridCell&, const profile::ProfileSummary& s) {
    core::log_info("        {:.1f} ms per iteration, coverage {:.1f}%", s.wall_us / 1000,
                   s.coverage_min * 100);
  };
  profile::run_grid(ctx.store(), profile::load_grid(grid_file), ctx.argv_line, progress);
}

void profile_show(Context& ctx, const ProfileShowArgs& a) {
  auto store = ctx.reader();
  show(*store, store->resolve_run(a.run), a, ctx.json);
}

}  // namespace trainscope::cli::torch_cli
