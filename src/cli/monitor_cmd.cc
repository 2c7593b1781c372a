// `trainscope watch`, `trainscope resources`, `trainscope report throughput`.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/markup.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/monitor/json.h"
#include "trainscope/monitor/report.h"
#include "trainscope/monitor/watch.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/run_env.h"

namespace fs = std::filesystem;

namespace trainscope::cli {
using core::ErrorKind;
using core::fail;

namespace {

void report_watch(const monitor::WatchResult& r) {
  core::note_recorded_run(r.run_name, r.run_uuid);
  if (r.malformed_lines > 0)
    core::log_warn("skipped {} malformed metric line(s); the first was: {} ({})", r.malformed_lines,
                   r.first_malformed, r.first_malformed_reason);
  if (r.overlong_lines > 0)
    core::log_warn(
        "{} line(s) longer than {} bytes were kept in the output but not read as "
        "metric lines",
        r.overlong_lines, monitor::kMaxMetricLine);
  core::log_info(
      "watch: run {} {} (exit code {}, {} samples, {} metric lines, {} param lines, {:.3g} kWh "
      "{})",
      core::short_uuid(r.run_uuid), r.exit_code == 0 ? "finished" : "failed", r.exit_code,
      r.samples, r.metric_lines, r.param_lines, r.energy.kwh(),
      r.energy.cpu_source == "rapl" ? "metered" : "estimated");
  if (r.output_held)
    core::log_warn(
        "watch: a process the command started still held its output a second after the "
        "command exited; not waited for (its later output is not recorded)");
  std::string cut;
  for (const auto& c : r.output_cut)
    if (!c.empty()) cut += (cut.empty() ? "" : "; ") + c;
  if (!cut.empty() && r.exit_code != 0)
    core::log_warn("watch: run {} holds only part of the command's output: {}",
                   core::short_uuid(r.run_uuid), cut);
  // trainscope exits as the watched program did.
  if (r.exit_code != 0)
    throw Exit(r.exit_code > 0 && r.exit_code < 256 ? r.exit_code : 1,
               r.signal > 0 ? fmt::format("the command was killed by signal {}",
                                          monitor::signal_name(r.signal))
                            : fmt::format("the command exited with code {}", r.exit_code));
  // Output that could not be kept is said once, exit 2: the run is whole
  // but for it (thirty-fourth hunt, A-C).
  if (!cut.empty())
    fail(ErrorKind::kUsage,
         "watch: run {} finished, but holds only part of the command's output ({}): give "
         "$TMPDIR room (or a higher `ulimit -f`)",
         core::short_uuid(r.run_uuid), cut);
}

void add_watch(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "watch", "Run any command, sample its process tree, record its output and metric lines");
  auto o = std::make_shared<monitor::WatchOptions>();
  auto pairs = std::make_shared<std::pair<std::vector<std::string>, std::vector<std::string>>>();
  cmd->add_option("--name", o->name,
                  "Run name (default: $TRAINSCOPE_RUN_NAME, else the command's name)")
      ->check(run_name_rule());
  cmd->add_option("--experiment", o->experiment,
                  "Experiment (default: $TRAINSCOPE_EXPERIMENT, else watch)")
      ->check(experiment_rule());
  // One value per --param / --tag, so that `--param a=1 -- sh -c ...` leaves
  // the command whole.
  cmd->add_option("--param", pairs->first,
                  "A param of the run, key=value (repeat it); the command may print more")
      ->allow_extra_args(false);
  cmd->add_option("--tag", pairs->second,
                  "A tag of the run, key=value (repeat it; added to $TRAINSCOPE_TAGS)")
      ->allow_extra_args(false);
  cmd->add_option("--interval", o->interval_s, "Sampling interval in seconds")
      ->check(number_in(0.05, 3600.0));
  cmd->add_option("--carbon", o->carbon_kg_per_kwh, "Grid carbon intensity, kg CO2 per kWh")
      ->check(number_in(0, 10));
  cmd->add_option("COMMAND", o->command, "The command and its arguments, after --")
      ->required()
      ->expected(-1);
  cmd->footer(
      "\nMetric lines the command may print (others are plain output; the rule for keys,\n"
      "numbers and steps is in docs/monitor.md):\n"
      "  trainscope: step=100 loss=0.53 acc=0.91\n"
      "  {\"step\": 100, \"loss\": 0.53}\n"
      "and the run's params, once each:\n"
      "  trainscope: param lr=0.1 optimizer=adam\n"
      "  {\"params\": {\"lr\": 0.1, \"optimizer\": {\"name\": \"adam\"}}}\n"
      "\nExample:\n  trainscope watch --name torch-mlp --param framework=pytorch -- python3 "
      "train.py --epochs 2\n");
  // $TRAINSCOPE_EXPERIMENT, _RUN_NAME and _TAGS: monitor::watch adds them.
  cmd->callback([&ctx, o, pairs] {
    for (const auto& p : pairs->first) {
      auto [k, v] = store::parse_key_value(p, "--param", "--param lr=0.1");
      // A param is set once, as a param line's and every other writer's.
      if (auto [it, added] = o->params.emplace(k, v); !added && it->second != v)
        core::fail(core::ErrorKind::kUsage,
                   "--param {}: param '{}' was given '{}' already; a param takes one value",
                   core::escape_for_display(p), core::escape_for_display(k),
                   core::escape_for_display(it->second));
    }
    for (const auto& t : pairs->second) {
      auto [k, v] = store::parse_key_value(t, "--tag", "--tag team=vision");
      if (auto why = store::own_tag_problem(k)) fail(ErrorKind::kUsage, "--tag: {}", *why);
      o->tags[k] = v;
    }
    report_watch(monitor::watch(ctx.store(), *o));
  });
}

void print_stats(const std::vector<monitor::SeriesStats>& stats, const std::string& f,
                 double warmup) {
  if (f == "json") {
    std::cout << monitor::resource_stats_json(stats).dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else if (f == "csv") {
    monitor::resource_stats_csv(std::cout, stats);
  } else {
    Table t({"SERIES", "SAMPLES", "MEAN", "P50", "P95", "MAX"});
    for (size_t c = 1; c < 6; ++c) t.align_right(c);
    for (const auto& s : stats)
      t.add_row({s.key, std::to_string(s.n), format::value(s.mean), format::value(s.p50),
                 format::value(s.p95), format::value(s.max)});
    t.print(std::cout);
    std::cout << fmt::format("(samples from the first {:g} s excluded as warm-up)\n", warmup);
  }
}

void add_resources(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("resources", "Mean, p50, p95 and max of a run's resource series");
  auto ref = std::make_shared<std::string>();
  auto warmup = std::make_shared<double>(5.0);
  auto plot = std::make_shared<std::string>();
  auto fmt_name = std::make_shared<std::string>("table");
  cmd->add_option("RUN", *ref, "Run")->required();
  cmd->add_option("--warmup", *warmup,
                  "Exclude samples from the run's first S seconds (all kept if none remain)")
      ->check(number_in(0, 1e9));
  cmd->add_option("--plot", *plot,
                  "Write resources_cpu.svg and resources_memory.svg to this folder");
  cmd->add_option("--format,-f", *fmt_name, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  set_example(cmd, "trainscope resources demo --warmup 10 --plot plots/");
  cmd->callback([&ctx, ref, warmup, plot, fmt_name] {
    if (!plot->empty()) core::check_output_folder(*plot);  // before any work
    auto store = ctx.reader();
    store::RunInfo run = store->resolve_run(*ref);
    auto stats = monitor::resource_stats(*store, run, *warmup);
    if (stats.empty())
      fail(ErrorKind::kNotFound,
           "run {} has no resource samples (sampling off, or not recorded by train/watch)",
           core::short_uuid(run.uuid));
    print_stats(stats, ctx.json ? "json" : *fmt_name, *warmup);
    if (plot->empty()) return;
    for (const char* kind : {"cpu", "memory"})
      core::write_file_atomically(
          fs::path(*plot) / fmt::format("resources_{}.svg", kind),
          [&](std::ostream& o) { o << monitor::resource_chart_svg(*store, run, kind); });
    core::log_info("wrote {}/resources_cpu.svg and resources_memory.svg", *plot);
  });
}

// The table as Markdown: a column per run, named by it (core/markup.h: a
// run's name stays text, whatever it holds).
void print_throughput_md(std::ostream& o, const std::vector<monitor::ThroughputColumn>& cols,
                         double warmup) {
  o << "| metric |";
  for (const auto& c : cols) o << " " << core::markdown_text(c.label) << " |";
  o << "\n| --- |";
  for (size_t i = 0; i < cols.size(); ++i) o << " ---: |";
  o << "\n| batch size |";
  for (const auto& c : cols) o << " " << core::markdown_text(c.batch_size) << " |";
  const auto& rows = monitor::throughput_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    o << "\n| " << core::markdown_text(rows[i].label) << " |";
    for (const auto& c : cols)
      o << " " << core::markdown_text(monitor::throughput_cell(c, i)) << " |";
  }
  o << fmt::format(
      "\n\nProcess-tree CPU and RSS means without the first {:g} s; GPU columns for gpu0.\n",
      warmup);
}

// The table for a terminal: every cell, the header's runs included,
// escaped (Table).
void print_throughput(std::ostream& o, const std::vector<monitor::ThroughputColumn>& cols,
                      double warmup) {
  std::vector<std::string> header = {"METRIC"};
  for (const auto& c : cols) header.push_back(c.label);
  Table t(header);
  for (size_t c = 1; c < header.size(); ++c) t.align_right(c);
  std::vector<std::string> batch = {"batch size"};
  for (const auto& c : cols) batch.push_back(c.batch_size);
  t.add_row(batch);
  const auto& rows = monitor::throughput_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::string> row = {rows[i].label};
    for (const auto& c : cols) row.push_back(monitor::throughput_cell(c, i));
    t.add_row(row);
  }
  t.print(o);
  o << fmt::format(
      "(process-tree CPU and RSS means without the first {:g} s; GPU columns for gpu0)\n", warmup);
}

// What `report throughput` takes.
struct ThroughputArgs {
  std::vector<std::string> refs;
  double warmup = 5.0;
  std::string format = "text", out;
};

void add_report(CLI::App& app, Context& ctx) {
  auto* report = app.add_subcommand("report", "A study's report, or tables across runs");
  set_example(report, "trainscope report throughput bs64 bs128 bs256");
  auto* cmd = report->add_subcommand(
      "throughput",
      "BRIEF §4 table: one column per run — CPU, memory, GPU, steps/s, accuracy, time to target");
  auto a = std::make_shared<ThroughputArgs>();
  cmd->add_option("RUNS", a->refs, "Runs to compare")->required()->expected(-1);
  cmd->add_option("--warmup", a->warmup, "Exclude the first S seconds of resource samples")
      ->check(number_in(0, 1e9));
  // Its own --format and --out: the report's (html, md, json of a study)
  // would be taken, and ignored, after `throughput`.
  cmd->add_option("--format,-f", a->format, "text, md (Markdown) or json")
      ->check(CLI::IsMember({"text", "md", "json"}));
  cmd->add_option("--out,-o", a->out, "Write to this file (default: stdout)");
  set_example(cmd, "trainscope report throughput bs64 bs128 bs256 --format md");
  cmd->callback([&ctx, a] {
    core::check_output_file(a->out);  // before any work
    auto store = ctx.reader();
    std::vector<monitor::ThroughputColumn> cols;
    for (const auto& run : store->resolve_runs(a->refs))  // a run named twice counts once
      cols.push_back(monitor::throughput_column(*store, run, a->warmup));
    const std::string f = ctx.json ? "json" : a->format;
    write_output(a->out, [&](std::ostream& o) {
      if (f == "json")
        return void(o << monitor::throughput_json(cols).dump(2, ' ', false, format::kInvalidUtf8)
                      << "\n");
      if (f == "md") return print_throughput_md(o, cols, a->warmup);
      print_throughput(o, cols, a->warmup);
    });
  });
}

}  // namespace

void register_monitor_commands(CLI::App& app, Context& ctx) {
  add_watch(app, ctx);
  add_resources(app, ctx);
  add_report(app, ctx);
}

}  // namespace trainscope::cli
