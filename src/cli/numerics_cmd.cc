// `trainscope numerics ...`: the floating-point lab. `logmap` adds the
// libtorch variants from the torch half when this trainscope has one.
#include <fmt/format.h>

#include <iostream>
#include <limits>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/numerics/json.h"
#include "trainscope/numerics/logmap.h"
#include "trainscope/numerics/record.h"

namespace trainscope::cli {

namespace {

struct LogmapArgs {
  numerics::LogmapOptions options;
  std::string name = "logmap", experiment = "numerics", out_dir;
  bool list = false;
};

void print_logmap(const numerics::LogmapOptions& o, const numerics::LogmapResult& res) {
  std::vector<std::string> header = {"VARIANT", "x(N)"};
  for (double t : o.thresholds) header.push_back("FIRST >" + core::format_double(t));
  header.insert(header.end(), {"NO DIGIT AT", "DIGITS LOST/STEP", "LYAPUNOV PREDICTS"});
  Table t(header);
  for (size_t c = 2; c < header.size(); ++c) t.align_right(c);
  t.add_row({"reference (MPFR, " + std::to_string(res.reference_precision) + " bits)",
             core::format_double(res.reference.back())});
  for (const auto& v : res.variants) {
    std::vector<std::string> row = {v.variant.id, fmt::format("{:.17g}", v.x.back())};
    for (auto s : v.first_over) row.push_back(s < 0 ? "never" : std::to_string(s));
    row.push_back(v.digits_gone < 0 ? "never" : std::to_string(v.digits_gone));
    row.push_back(v.window_from >= 0 ? fmt::format("{:.4f}", v.digits_lost_per_step) : "-");
    row.push_back(v.window_from >= 0 ? fmt::format("{:.4f} (steps {}-{})", v.predicted_per_step,
                                                   v.window_from, v.window_to)
                                     : "-");
    t.add_row(row);
  }
  t.print(std::cout);
  std::cout << fmt::format(
      "Lyapunov exponent over all {} steps {:.5f}: {:.4f} digits per step on average\n", o.steps,
      res.lyapunov, res.predicted_digits_per_step);
}

void list_variants(const numerics::LogmapOptions& o) {
  auto all = numerics::available_variants();
  all.insert(all.end(), o.extra_variants.begin(), o.extra_variants.end());
  Table t({"ID", "VARIANT"});
  for (const auto& v : all) t.add_row({v.id, v.name});
  t.print(std::cout);
}

// The float variants always; libtorch's when this trainscope has them.
void logmap(Context& ctx, const LogmapArgs& a) {
  numerics::LogmapOptions o = a.options;
  env::Manifest m = env::capture_machine();
  if (TorchCommands* t = torch_commands_if_present()) {
    t->add_logmap_variants(o);
    m.merge(t->torch_environment());
  }
  if (a.list) return list_variants(o);
  numerics::validate(o);
  auto store = ctx.store();  // a store that cannot be opened fails before the work
  core::log_info("computing the exact reference at {} bits and {} variants...",
                 numerics::reference_precision(std::strtod(o.r.c_str(), nullptr), o.steps),
                 o.variants.empty() ? std::string("all") : std::to_string(o.variants.size()));
  auto res = numerics::run_logmap(o);
  const std::string run = numerics::record_logmap(store, o, res,
                                                  {.name = a.name,
                                                   .experiment = a.experiment,
                                                   .command_line = ctx.argv_line,
                                                   .out_dir = a.out_dir,
                                                   .environment = m});
  note_recorded_run(*store, run);
  if (ctx.json) {
    std::cout << numerics::logmap_json(run, o, res).dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
    return;
  }
  print_logmap(o, res);
  std::cout << "recorded run " << run << " (plots and CSV as artifacts"
            << (a.out_dir.empty() ? "" : ", copies in " + core::escape_for_display(a.out_dir))
            << ")\n";
}

void add_logmap(CLI::App* numerics, Context& ctx) {
  auto* cmd = numerics->add_subcommand(
      "logmap",
      "Logistic map x(n+1) = r*x(n)*(1-x(n)) across formats, operation orders and FMA, "
      "against an exact MPFR reference");
  auto a = std::make_shared<LogmapArgs>();
  numerics::LogmapOptions& o = a->options;
  cmd->add_option("--x0", o.x0, "Start value in [0, 1] (decimal; the reference uses it exactly)");
  cmd->add_option("--r", o.r, "Parameter in (0, 4]");
  cmd->add_option("--steps", o.steps, "Number of iterations (at most 100000)");
  cmd->add_option("--variants", o.variants, "Only these variant ids (see --list)");
  cmd->add_option("--thresholds", o.thresholds, "Report the first step each |x - ref| exceeds");
  cmd->add_option("--name", a->name, "Run name")->check(run_name_rule());
  cmd->add_option("--experiment", a->experiment, "Experiment to record into")
      ->check(experiment_rule());
  cmd->add_option("--out", a->out_dir, "Also write trajectories.csv and the SVG plots here");
  cmd->add_flag("--list", a->list, "List the variants and exit");
  set_example(cmd, "trainscope numerics logmap --x0 0.4 --r 3.7 --steps 2000 --out logmap/");
  cmd->callback([&ctx, a] {
    core::check_output_folder(a->out_dir);  // before any work
    logmap(ctx, *a);
  });
}

void print_sum(const std::string& run, const numerics::SumReport& rep, bool json) {
  if (json) {
    std::cout << numerics::sum_json(run, rep).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  Table t({"METHOD", "FLOAT32 SUM", "ABS ERROR", "ERROR (ULP)"});
  for (size_t c = 1; c < 4; ++c) t.align_right(c);
  for (const auto& r : rep.results)
    t.add_row({r.method, fmt::format("{:.9g}", r.value), fmt::format("{:.3g}", r.abs_error),
               fmt::format("{:.1f}", r.ulp_error)});
  std::cout << fmt::format("{} float32 values (seed {}), exact sum {:.17g}\n", rep.n, rep.seed,
                           rep.exact);
  t.print(std::cout);
  std::cout << "recorded run " << run << "\n";
}

void add_sum(CLI::App* numerics, Context& ctx) {
  auto* sum = numerics->add_subcommand(
      "sum", "One float32 vector summed sequentially, pairwise, blocked per thread count, Kahan");
  auto n = std::make_shared<int64_t>(1'000'000);
  auto seed = std::make_shared<uint64_t>(42);
  sum->add_option("--n", *n, "Vector length");
  sum->add_option("--seed", *seed, "Seed of the values")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()));
  set_example(sum, "trainscope numerics sum --n 1000000 --seed 42");
  sum->callback([&ctx, n, seed] {
    auto rep = numerics::run_sum(*n, *seed);
    std::string run = numerics::record_sum(
        ctx.store(), rep, {.name = "sum", .experiment = "numerics", .command_line = ctx.argv_line});
    note_recorded_run(*ctx.store(), run);
    print_sum(run, rep, ctx.json);
  });
}

}  // namespace

void register_numerics_commands(CLI::App& app, Context& ctx) {
  auto* numerics = app.add_subcommand("numerics", "Floating-point lab");
  numerics->require_subcommand(1);
  set_example(numerics, "trainscope numerics logmap --r 3.7 --steps 2000");
  add_logmap(numerics, ctx);
  add_sum(numerics, ctx);
}

}  // namespace trainscope::cli
