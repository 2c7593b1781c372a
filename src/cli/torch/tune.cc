// tune: the settings that train fastest on this machine.
#include "trainscope/tune/tune.h"

#include <unistd.h>

#include <iostream>

#include "../output.h"
#include "torch_cli.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/cpus.h"
#include "trainscope/format/format.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/tune/json.h"

namespace trainscope::cli::torch_cli {

namespace {

tune::Baseline baseline_of(const config::Config& cfg, const TuneArgs& a) {
  tune::Baseline b;
  b.threads = train::resolved_threads(cfg);
  b.max_threads = env::cpu_budget().threads();
  b.memory_format = cfg.compute.memory_format;
  b.mkldnn = cfg.determinism.mkldnn;
  b.batch_size = cfg.train.batch_size;
  b.batch_multiples = a.batch_multiples;
  return b;
}

void print_results(const tune::TuneReport& rep) {
  Table t({"SETTING", "STEP ms", "[MIN..MAX]", "SAMPLES/s", "PEAK MiB", "SPEED", "NUMBERS"});
  for (size_t c = 1; c < 6; ++c) t.align_right(c);
  for (size_t i = 0; i < rep.results.size(); ++i) {
    const auto& r = rep.results[i];
    const auto [lo, hi] = std::minmax_element(r.step_ms.begin(), r.step_ms.end());
    t.add_row({r.setting.label + (i == rep.best ? " *" : ""),
               fmt::format("{:.2f}", r.median_step_ms), fmt::format("[{:.2f}..{:.2f}]", *lo, *hi),
               fmt::format("{:.0f}", r.samples_per_s), fmt::format("{:.0f}", r.peak_rss_mib),
               fmt::format("{:.2f}x", r.speedup), r.numerics});
  }
  t.print(std::cout);
}

void print_layers(const tune::TuneReport& rep) {
  if (rep.layers.empty()) return;
  std::cout << "\nwhere the time moves (profiled, forward + backward + update per step):\n";
  Table t({"LAYER", "TYPE", "AS CONFIGURED us", "FASTEST us", "CHANGE"});
  for (size_t c = 2; c < 5; ++c) t.align_right(c);
  for (const auto& l : rep.layers)
    t.add_row(
        {l.layer, l.type, fmt::format("{:.0f}", l.baseline_us), fmt::format("{:.0f}", l.best_us),
         l.baseline_us > 0 ? fmt::format("{:+.0f}%", (l.best_us / l.baseline_us - 1) * 100) : "-"});
  t.print(std::cout);
}

void print_verdict(const tune::TuneReport& rep) {
  const auto& best = rep.results[rep.best];
  if (rep.best == 0) {
    std::cout << "\nfastest: the config as it is\n";
  } else {
    std::cout << fmt::format("\nfastest: {} ({:.2f}x the samples/s of the config as it is); set",
                             best.setting.label, best.speedup);
    for (const auto& o : best.setting.overrides) std::cout << " " << o;
    std::cout << "\n";
  }
  std::cout.flush();
  for (const auto& r : rep.results)
    if (!r.same_numbers)
      core::log_warn("{} changes the numbers: {} (results are not comparable bit for bit)",
                     r.setting.label, r.numerics);
  std::cout << fmt::format("({} trials, {:.0f} s)\n",
                           rep.results.size() * rep.results[0].step_ms.size(), rep.seconds);
}

// Each batch multiple gives a batch the config must accept: checked here,
// before the first trial, rather than by a trial that fails.
void check_batch_multiples(const TuneArgs& a, const config::Config& cfg) {
  for (double m : a.batch_multiples) {
    const double batch = static_cast<double>(cfg.train.batch_size) * m;
    // A batch below 1 was dropped without a word (twenty-fifth hunt, A-D3).
    if (!(m > 0) || !(batch >= 1) || !(batch <= (1 << 24)))
      core::fail(core::ErrorKind::kUsage,
                 "--batch-multiples: {} must be > 0 and give a batch from 1 to 16777216 (train."
                 "batch_size {} x {})",
                 core::format_double(m), cfg.train.batch_size, core::format_double(m));
    auto sets = a.sets;
    sets.push_back(fmt::format("train.batch_size={}", static_cast<int64_t>(batch)));
    try {
      config::load_config(a.config, sets);
    } catch (const core::Error& e) {
      throw core::Error("--batch-multiples " + core::format_double(m) + ": " + e.what(), e.kind());
    }
  }
}

}  // namespace

void tune(Context& ctx, const TuneArgs& a) {
  const config::Config cfg = config::load_config(a.config, a.sets);
  check_batch_multiples(a, cfg);
  tune::TuneOptions o;
  std::error_code ec;
  o.executable = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  o.config = a.config;
  o.overrides = a.sets;
  o.settings = tune::candidate_settings(baseline_of(cfg, a));
  o.batch_size = cfg.train.batch_size;
  o.steps = a.steps;
  o.rounds = a.rounds;
  o.profile_layers = !a.no_profile;
  o.progress = [](int trial, int trials, const std::string& label) {
    core::log_info("[{}/{}] {}", trial, trials, label);
  };
  const tune::TuneReport rep = tune::run_tune(o);
  if (ctx.json) {
    std::cout << tune::tune_report_json(rep).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  print_results(rep);
  print_layers(rep);
  print_verdict(rep);
}

}  // namespace trainscope::cli::torch_cli
