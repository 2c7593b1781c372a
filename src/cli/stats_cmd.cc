// `trainscope stats`: statistics of one metric over many runs.
#include <fmt/format.h>

#include <iostream>
#include <limits>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/stats/runs.h"

namespace trainscope::cli {

namespace {

struct StatsArgs {
  stats::Selection selection;
  stats::AnalysisOptions options;
  std::string parent, reduce = "last", reference_run, format = "text", out;
  double reference_value = NAN;
};

std::string num(const std::optional<double>& v) { return v ? format::value(*v) : "-"; }

std::string p_text(const std::optional<stats::TestResult>& t) {
  if (!t) return "-";
  return fmt::format("{} = {} (p = {})", t->test, format::value(t->statistic),
                     format::value(t->p_value));
}

void print_groups(std::ostream& o, const stats::MetricStats& m) {
  Table t({"GROUP", "N", "MEAN", "SD", "SD 95% CI (bootstrap)", "MEAN 95% CI", "CV", "MIN", "MAX",
           "DIFF%"});
  for (size_t c : {1, 2, 3, 6, 7, 8, 9}) t.align_right(c);
  for (const auto& g : m.groups) {
    const auto& s = g.summary;
    std::string sd_ci =
        g.sd_ci ? fmt::format("[{}, {}]", format::value(g.sd_ci->low), format::value(g.sd_ci->high))
                : "-";
    std::string ci = s.ci_low ? fmt::format("[{}, {}]", num(s.ci_low), num(s.ci_high)) : "-";
    t.add_row({g.group.empty() ? "(all)" : g.group, std::to_string(s.n), format::value(s.mean),
               num(s.sd), sd_ci, ci, num(s.cv), format::value(s.min), format::value(s.max),
               num(g.diff_percent)});
  }
  o << m.metric << " (SD with ddof=" << m.options.ddof << ")\n";
  t.print(o);
}

void print_comparison(std::ostream& o, const stats::Comparison& c) {
  o << "\n" << p_text(c.anova) << "\n" << p_text(c.kruskal) << "\n" << p_text(c.levene) << "\n";
  if (c.components) {
    const auto& v = *c.components;
    o << fmt::format(
        "variance between groups {} [{}, {}], within {} [{}, {}], share between {:.1f}%\n",
        format::value(v.s2_between), format::value(v.s2_between_ci.low),
        format::value(v.s2_between_ci.high), format::value(v.s2_within),
        format::value(v.s2_within_ci.low), format::value(v.s2_within_ci.high), 100 * v.icc);
  }
  if (c.pairs.empty()) return;
  Table t({"A", "B", "WELCH t", "p", "p (HOLM)", "HEDGES g"});
  for (size_t col : {2, 3, 4, 5}) t.align_right(col);
  for (const auto& p : c.pairs)
    t.add_row({p.a, p.b, format::value(p.welch.statistic), format::value(p.welch.p_value),
               format::value(p.p_holm), num(p.hedges_g)});
  o << "\n";
  t.print(o);
}

void run_stats(Context& ctx, StatsArgs& a) {
  auto store = ctx.reader();
  a.selection.reduce = stats::parse_reduce(a.reduce);
  if (!a.parent.empty()) a.selection.filter.parent_uuid = store->resolve_run(a.parent).uuid;
  // A run named twice counts once.
  std::vector<std::string> uuids;
  for (const auto& r : store->resolve_runs(a.selection.runs)) uuids.push_back(r.uuid);
  a.selection.runs = uuids;
  if (!a.reference_run.empty()) {
    stats::Selection ref = a.selection;
    ref.runs = {a.reference_run};
    ref.by.clear();
    a.options.reference = stats::collect(*store, ref).front().value;
  } else if (!std::isnan(a.reference_value)) {
    a.options.reference = a.reference_value;
  }
  auto m = stats::analyse(a.selection.metric, stats::collect(*store, a.selection), a.options);
  write_output(a.out, [&](std::ostream& o) {
    if (ctx.json || a.format == "json")
      return void(o << format::metric_stats(m).dump(2, ' ', false, format::kInvalidUtf8) << "\n");
    if (a.format == "csv") return format::metric_stats_csv(o, m);
    print_groups(o, m);
    if (m.comparison) print_comparison(o, *m.comparison);
    for (const auto& n : m.notes) o << "note: " << n << "\n";
  });
}

}  // namespace

void register_stats_commands(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "stats", "Mean, SD with bootstrap CI, tests between groups, of a metric over runs");
  auto a = std::make_shared<StatsArgs>();
  cmd->add_option("METRIC", a->selection.metric, "Metric key, e.g. test/accuracy")->required();
  cmd->add_option("RUN", a->selection.runs, "Runs (UUID, prefix or name); default: all finished");
  cmd->add_option("--parent,--study", a->parent, "Only the runs of this study (parent run)");
  cmd->add_option("--experiment,-e", a->selection.filter.experiment,
                  "Only runs of this experiment");
  cmd->add_option("--by", a->selection.by,
                  "Group by a param (optimizer.name, params.KEY), a tag (tags.KEY) or a run "
                  "attribute (experiment, status, host, ...), as --filter names them");
  cmd->add_option("--reduce", a->reduce, "Value per run: last, min or max")
      ->check(CLI::IsMember({"last", "min", "max"}));
  cmd->add_option("--ddof", a->options.ddof, "Delta degrees of freedom of the SD (default 1)")
      ->check(CLI::Range(0, 1));
  cmd->add_option("--ref-run", a->reference_run, "Diff% against this run's value");
  cmd->add_option("--ref", a->reference_value, "Diff% against this value")
      ->check(number_in(-1e300, 1e300));
  cmd->add_option("--resamples", a->options.bootstrap_resamples, "Bootstrap resamples")
      ->check(CLI::Range(100, 10000000));
  cmd->add_option("--seed", a->options.seed, "Seed of the bootstrap")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()));
  cmd->add_flag("--shapiro-as-scipy", a->options.shapiro_as_scipy,
                "Shapiro-Wilk in single precision, bit for bit as scipy.stats.shapiro");
  cmd->add_option("--format,-f", a->format, "text, json or csv")
      ->check(CLI::IsMember({"text", "json", "csv"}));
  cmd->add_option("--out,-o", a->out, "Write to this file instead of stdout");
  set_example(cmd, "trainscope stats test/accuracy --study seeds --by optimizer.name");
  cmd->callback([&ctx, a] {
    core::check_output_file(a->out);  // before any work
    run_stats(ctx, *a);
  });
}

}  // namespace trainscope::cli
