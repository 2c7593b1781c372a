// `trainscope plot RUN... KEY...`: metric curves of runs, overlaid.
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <set>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/format/plot.h"

namespace trainscope::cli {

namespace {

struct PlotArgs {
  std::vector<std::string> items;  // runs, then keys (split_items)
  format::PlotOptions options;
  std::string out, format = "svg";
};

// Whether `item` is a metric key of one of `runs`, or the chart of one
// ("loss" of train/loss).
bool names_a_series(store::Store& store, const std::vector<store::RunInfo>& runs,
                    const std::string& item) {
  for (const auto& r : runs)
    for (const auto& m : store.metric_summaries(r.uuid))
      if (m.key == item || m.key.substr(m.key.rfind('/') + 1) == item) return true;
  return false;
}

// Runs, then keys: once an item after the runs is not a run, the rest are
// keys; an item after the runs that names a run and a series of them is
// refused (thirtieth hunt, A-D7: a run named "loss" took the chart's place).
void split_items(store::Store& store, const std::vector<std::string>& items,
                 std::vector<store::RunInfo>& runs, std::vector<std::string>& keys) {
  std::set<std::string> given;
  for (const auto& item : items) {
    if (!given.insert(item).second) continue;  // named twice: once
    std::optional<store::RunInfo> r;
    if (keys.empty() || runs.empty()) {
      try {
        r = store.resolve_run(item);
      } catch (const core::Error& e) {
        if (e.kind() == core::ErrorKind::kConflict) throw;  // an ambiguous run reference
      }
    }
    if (!r) {
      keys.push_back(item);
      continue;
    }
    if (!runs.empty() && names_a_series(store, runs, item))
      core::fail(core::ErrorKind::kConflict,
                 "'{}' names run {} and a metric or chart of the runs before it; give the run "
                 "by its UUID, or the metric by its whole key (train/loss)",
                 item, core::short_uuid(r->uuid));
    // A run named twice (by name and UUID) is plotted once.
    if (std::none_of(runs.begin(), runs.end(), [&](auto& x) { return x.uuid == r->uuid; }))
      runs.push_back(std::move(*r));
  }
}

void run_plot(Context& ctx, const PlotArgs& a) {
  auto store = ctx.reader();
  std::vector<store::RunInfo> runs;
  std::vector<std::string> keys;
  split_items(*store, a.items, runs, keys);
  if (runs.empty())
    core::fail(core::ErrorKind::kUsage, "none of {} names a run; give RUN... KEY...",
               fmt::format("'{}'", fmt::join(a.items, "', '")));
  if (keys.empty())
    core::fail(core::ErrorKind::kUsage,
               "give at least one metric key after the runs, e.g. train/loss");
  auto curves = format::metric_curves(*store, runs, keys, a.options);
  const std::string f = ctx.json ? "json" : a.format;
  write_output(a.out, [&](std::ostream& o) {
    if (f == "csv")
      format::curves_csv(o, curves);
    else if (f == "json")
      format::curves_json(o, curves, a.options);
    else
      o << format::curves_svg(curves, a.options);
  });
}

}  // namespace

void register_plot_commands(CLI::App& app, Context& ctx) {
  auto* cmd =
      app.add_subcommand("plot", "Metric curves of one or more runs, overlaid (SVG, CSV, JSON)");
  auto a = std::make_shared<PlotArgs>();
  cmd->add_option("RUN_OR_KEY", a->items,
                  "Runs (UUID, prefix or name), then metric keys or charts (loss: train/loss and "
                  "test/loss overlaid; accuracy)")
      ->required()
      ->expected(2, -1);
  cmd->add_option("--x", a->options.x, "step, epoch or time")
      ->check(CLI::IsMember({"step", "epoch", "time"}));
  cmd->add_option("--smooth", a->options.smooth,
                  "Exponential smoothing weight in [0, 1) as TensorBoard's (0: raw)");
  cmd->add_flag("--log-y", a->options.log_y, "Logarithmic y axis");
  cmd->add_option("--format,-f", a->format, "svg, csv or json (--json)")
      ->check(CLI::IsMember({"svg", "csv", "json"}));
  cmd->add_option("--out,-o", a->out, "Write to this file instead of stdout");
  set_example(cmd,
              "trainscope plot demo demo-2 train/loss --smooth 0.6 -o loss.svg\n"
              "  trainscope plot demo loss --x epoch -o loss.svg   # train/loss + test/loss");
  cmd->callback([&ctx, a] {
    core::check_output_file(a->out);  // before any work
    run_plot(ctx, *a);
  });
}

}  // namespace trainscope::cli
