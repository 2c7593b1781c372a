// `trainscope profile ...` and `trainscope costmodel ...`: parsed here, run
// by the torch half.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/error.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/profile/json.h"
#include "trainscope/profile/kineto.h"
#include "trainscope/profile/report.h"

namespace trainscope::cli {

namespace {

// The operator table needs no libtorch: it reads the stored trace.
void print_operators(Context& ctx, const ProfileShowArgs& a) {
  auto store = ctx.reader();
  const store::RunInfo run = store->resolve_run(a.run);
  const profile::OperatorTable t = profile::operator_table(*store, run.uuid);
  const size_t top = static_cast<size_t>(a.ops);
  if (ctx.json || a.format == "json")
    return void(std::cout << profile::operator_table_json(run.uuid, t, top)
                                 .dump(2, ' ', false, format::kInvalidUtf8)
                          << "\n");
  if (a.format == "csv") return profile::operator_table_csv(std::cout, t, top);
  std::cout << fmt::format(
      "run {}: {} operators over {} profiled steps, self time {:.2f} ms per step\n",
      core::short_uuid(run.uuid), t.ops.size(), t.steps,
      t.self_us / static_cast<double>(std::max<int64_t>(1, t.steps)) / 1000);
  Table tab({"NAME", "SELF %", "SELF us", "TOTAL us", "AVG us", "CALLS", "SELF us/STEP"});
  for (size_t c = 1; c < 7; ++c) tab.align_right(c);
  for (size_t i = 0; i < t.ops.size() && (top == 0 || i < top); ++i) {
    const auto& o = t.ops[i];
    tab.add_row(
        {o.name, fmt::format("{:.2f}%", t.self_us > 0 ? o.self_us / t.self_us * 100 : 0.0),
         fmt::format("{:.1f}", o.self_us), fmt::format("{:.1f}", o.total_us),
         fmt::format("{:.2f}", o.total_us / static_cast<double>(o.calls)), std::to_string(o.calls),
         fmt::format("{:.1f}", o.self_us / static_cast<double>(std::max<int64_t>(1, t.steps)))});
  }
  tab.print(std::cout);
}

// `profile import TRACE.json`: a torch.profiler trace as a run's profile.
void add_import(CLI::App* cmd, Context& ctx) {
  auto* im = cmd->add_subcommand(
      "import", "Import a torch.profiler (Kineto) Chrome trace as a run's per-layer profile");
  auto o = std::make_shared<profile::KinetoImportOptions>();
  im->add_option("TRACE", o->trace, "The trace torch.profiler wrote (export_chrome_trace)")
      ->required();
  im->add_option("--run", o->run, "Add it to this run (which has no profile yet)");
  im->add_option("--name", o->name, "The new run's name (default: the file's)")
      ->check(run_name_rule());
  im->add_option("--experiment,-e", o->experiment, "The new run's experiment (default: profile)")
      ->check(experiment_rule());
  set_example(im,
              "trainscope profile import trace.json --name cnn-kineto && trainscope profile show "
              "cnn-kineto");
  im->callback([&ctx, o] {
    o->command_line = ctx.argv_line;
    const auto r = profile::import_kineto_trace(*ctx.store(), *o);
    core::note_recorded_run(r.name, r.uuid);
    if (ctx.json)
      return void(std::cout << format::Json{{"uuid", r.uuid},
                                            {"name", r.name},
                                            {"steps", r.steps},
                                            {"layers", r.layers},
                                            {"events", r.events},
                                            {"coverage_min", r.coverage_min}}
                                   .dump(2, ' ', false, format::kInvalidUtf8)
                            << "\n");
    std::cout << fmt::format(
        "imported {} step{} of {} ({} layers, {} events) into run {} ({}); coverage {:.1f}%\n",
        r.steps, r.steps == 1 ? "" : "s", core::escape_for_display(o->trace.string()), r.layers,
        r.events, core::short_uuid(r.uuid), core::escape_for_display(r.name), r.coverage_min * 100);
  });
}

void add_grid_and_show(CLI::App* cmd, Context& ctx) {
  auto* grid = cmd->add_subcommand("grid", "Profile models x batch sizes (feeds the cost model)");
  auto file = std::make_shared<std::string>();
  grid->add_option("GRID", *file, "Grid YAML, e.g. configs/profile_grid.yaml")->required();
  set_example(grid, "trainscope profile grid configs/profile_grid.yaml");
  grid->callback([&ctx, file] { torch_commands().profile_grid(ctx, *file); });

  auto* sh =
      cmd->add_subcommand("show", "Show a run's profile: sorted table, categories, overhead");
  auto a = std::make_shared<ProfileShowArgs>();
  sh->add_option("RUN", a->run, "Run")->required();
  sh->add_option("--format,-f", a->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  sh->add_option("--trace", a->trace,
                 "Write the Chrome trace JSON of the first profiled iteration here");
  sh->add_option("--svg", a->svg, "Write a chart of time per layer split by phase here");
  sh->add_option("--ops", a->ops,
                 "List the top N operators by self time over every profiled step, as the "
                 "PyTorch profiler's key_averages().table() (0: all)")
      ->expected(0, 1)
      ->default_str("20")
      ->check(integer_in(0, 1'000'000'000));
  set_example(sh,
              "trainscope profile show alexnet_mini-profile --svg layers.svg --trace trace.json\n"
              "  trainscope profile show alexnet_mini-profile --ops 15");
  sh->callback([&ctx, a] {
    core::check_output_file(a->trace);  // before any work
    core::check_output_file(a->svg);
    if (a->ops >= 0) return print_operators(ctx, *a);
    torch_commands().profile_show(ctx, *a);
  });
}

void add_profile(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "profile", "Per-layer forward/backward/update time that accounts for the whole iteration");
  auto a = std::make_shared<ProfileArgs>();
  cmd->add_option("CONFIG", a->config, "YAML config to train and profile");
  cmd->add_option("--set", a->sets, "Override a config key");
  cmd->add_option("--steps", a->steps, "Train this many steps (default 60)")
      ->check(CLI::Range(1, 1000000000).description("an integer >= 1"));
  cmd->add_option("--every", a->every,
                  "Profile every Nth step after the warm-up (default: profile.every)")
      ->check(CLI::Range(1, 1000000000).description("an integer >= 1"));
  cmd->add_option("--name", a->name, "Run name")->check(run_name_rule());
  set_example(cmd,
              "trainscope profile configs/alexnet_mini.yaml --steps 60 && trainscope profile show "
              "alexnet_mini");
  cmd->callback([&ctx, cmd, a] {
    if (!cmd->get_subcommands().empty()) return;
    if (a->config.empty())
      core::fail(core::ErrorKind::kUsage, "give a CONFIG to profile, or `profile show RUN`");
    torch_commands().profile(ctx, *a);
  });
  add_grid_and_show(cmd, ctx);
  add_import(cmd, ctx);
}

void add_costmodel(CLI::App& app, Context& ctx) {
  auto* cm = app.add_subcommand("costmodel", "Predict training time from a network's structure");
  cm->require_subcommand(1);
  set_example(
      cm, "trainscope costmodel fit && trainscope costmodel predict configs/vgg11.yaml --batch 64");
  auto a = std::make_shared<CostmodelArgs>();
  auto* fit = cm->add_subcommand("fit", "Fit per-layer-type regressions on profiled runs");
  fit->add_option("RUNS", a->runs, "Profiled runs (default: every profiled run in the store)");
  fit->add_option("--out,-o", a->model_file, "Where to write the model");
  set_example(fit, "trainscope costmodel fit --out costmodel.json");
  fit->callback([&ctx, a] {
    core::check_output_file(a->model_file);  // before any work
    costmodel_fit(ctx, *a);
  });
  auto* pr =
      cm->add_subcommand("predict", "Predict per-layer and per-iteration time without training");
  pr->add_option("CONFIG", a->config, "Config whose model to predict")->required();
  pr->add_option("--batch", a->batch, "Batch size (0: the config's)")
      ->check(integer_in(0, 1 << 24));
  pr->add_option("--set", a->sets, "Override a config key");
  pr->add_option("--model", a->model_file, "Cost model file");
  set_example(pr, "trainscope costmodel predict configs/vgg11_seed.yaml --batch 64");
  pr->callback([&ctx, a] { torch_commands().costmodel_predict(ctx, *a); });
  auto* ev = cm->add_subcommand("eval", "Leave-one-architecture-out MAPE of the cost model");
  ev->add_option("RUNS", a->runs, "Profiled runs (default: all)");
  ev->add_option("--format,-f", a->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  ev->add_flag("--layers", a->layers, "Also list every layer's measured and predicted time");
  ev->add_option("--svg", a->svg, "Write a predicted-vs-measured scatter plot (log-log) here");
  set_example(ev, "trainscope costmodel eval --svg costmodel-eval.svg");
  ev->callback([&ctx, a] {
    core::check_output_file(a->svg);  // before any work
    costmodel_eval(ctx, *a);
  });
}

void add_tune(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "tune", "Measure which threads, memory format, oneDNN (and batch size) train fastest here");
  auto a = std::make_shared<TuneArgs>();
  cmd->add_option("CONFIG", a->config, "YAML config to tune")->required();
  cmd->add_option("--set", a->sets, "Override a config key (applies to every trial)");
  cmd->add_option("--steps", a->steps, "Steps per trial (default 150)")
      ->check(CLI::Range(30, 100000));
  cmd->add_option("--rounds", a->rounds, "Trials per setting, interleaved (default 3)")
      ->check(CLI::Range(1, 50));
  cmd->add_option("--batch-multiples", a->batch_multiples,
                  "Also try the batch size times these, e.g. 0.5,2 (changes the training)")
      ->delimiter(',');
  cmd->add_flag("--no-profile", a->no_profile, "Skip the per-layer comparison");
  set_example(cmd, "trainscope tune configs/demo.yaml --batch-multiples 2");
  cmd->callback([&ctx, a] { torch_commands().tune(ctx, *a); });
}

}  // namespace

void register_profile_commands(CLI::App& app, Context& ctx) {
  add_profile(app, ctx);
  add_costmodel(app, ctx);
  add_tune(app, ctx);
}

}  // namespace trainscope::cli
