// `trainscope stats`: statistics of one metric over many runs.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <limits>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/stats/compare.h"
#include "trainscope/stats/factors.h"
#include "trainscope/stats/json.h"
#include "trainscope/stats/runs.h"
#include "trainscope/study/study.h"

namespace trainscope::cli {

namespace {

struct StatsArgs {
  stats::Selection selection;
  stats::AnalysisOptions options;
  std::string parent, reduce = "last", reference_run, format = "text", out;
  double reference_value = NAN;
  std::vector<std::string> by, compare, fixed;
  stats::CompareOptions compare_options;
  double delta = NAN;
  std::string interactions = "auto";
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
    t.add_row({g.group.empty() ? "(all)" : stats::group_text(g.group), std::to_string(s.n),
               format::value(s.mean), num(s.sd), sd_ci, ci, num(s.cv), format::value(s.min),
               format::value(s.max), num(g.diff_percent)});
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
    t.add_row({stats::group_text(p.a), stats::group_text(p.b), format::value(p.welch.statistic),
               format::value(p.welch.p_value), format::value(p.p_holm), num(p.hedges_g)});
  o << "\n";
  t.print(o);
}

std::string interval(const stats::Interval& i) {
  return fmt::format("[{}, {}]", format::value(i.low), format::value(i.high));
}

std::string interval(const std::optional<stats::Interval>& i) { return i ? interval(*i) : "-"; }

// The comparison as the study report's JSON has each pair of cells, with
// what was compared.
format::Json comparison_json(const StatsArgs& a, const stats::PairComparison& c) {
  format::Json j = stats::pair_comparison_json(c);
  j["metric"] = a.selection.metric;
  j["by"] = a.selection.by;
  for (int i : {0, 1})  // null: the runs that lack the field
    j[i ? "b" : "a"] =
        a.compare[i] == stats::kUnsetGroup ? format::Json(nullptr) : format::Json(a.compare[i]);
  return j;
}

void print_comparison(std::ostream& o, const StatsArgs& a, const stats::PairComparison& c) {
  const auto& opt = c.options;
  int pct = static_cast<int>(std::lround(100 * opt.confidence));
  // The names and groups as every table shows them: a group's stored text
  // holding ESC or a line feed reached the terminal (twenty-seventh hunt, A-D2).
  const auto shown = [](const std::string& s) { return core::escape_for_display(s); };
  o << fmt::format("{} by {}: A = {} ({} runs), B = {} ({} runs)\n", shown(a.selection.metric),
                   shown(a.selection.by), shown(stats::group_text(a.compare[0])), c.a.n,
                   shown(stats::group_text(a.compare[1])), c.b.n);
  o << fmt::format("P(A > B)            {} {}% CI {} (bootstrap, {} resamples, seed {})\n",
                   format::value(c.p_improvement), pct, interval(c.p_improvement_ci), opt.resamples,
                   opt.seed);
  std::string welch = c.welch_df ? fmt::format(" (Welch, df {})", format::value(*c.welch_df)) : "";
  o << fmt::format("mean(A) - mean(B)   {} {}% CI {}{}; bootstrap {}\n",
                   format::value(c.mean_difference), pct, interval(c.mean_difference_ci), welch,
                   interval(c.mean_difference_bootstrap_ci));
  if (c.runs_needed)
    o << fmt::format(
        "runs needed per side {} to detect a difference of {} with power {} at alpha {} "
        "(two-sided Welch t-test, SDs {} and {})\n",
        *c.runs_needed, format::value(c.delta), opt.power, opt.alpha, num(c.a.sd), num(c.b.sd));
  for (const auto& n : c.notes) o << "note: " << core::escape_for_display(n) << "\n";
}

void run_compare(StatsArgs& a, const std::vector<stats::RunValue>& all,
                 std::vector<std::string> notes) {
  if (!std::isnan(a.delta)) a.compare_options.delta = a.delta;
  a.compare_options.resamples = a.options.bootstrap_resamples;
  a.compare_options.seed = a.options.seed;
  const auto values = stats::finite_values(all, a.selection.metric, notes);
  for (auto& side : a.compare) {
    side = stats::group_label(side);  // --compare 0.10 is group 0.1
    // "(unset)" names the runs that lack the field, unless a run's value
    // is that text.
    const auto stored = [&](const stats::RunValue& v) { return v.group == side; };
    if (side == "(unset)" && std::none_of(values.begin(), values.end(), stored))
      side = stats::kUnsetGroup;
  }
  auto c = stats::compare_groups(values, a.compare[0], a.compare[1], a.compare_options);
  c.notes.insert(c.notes.begin(), notes.begin(), notes.end());
  write_output(a.out, [&](std::ostream& o) {
    if (a.format == "json")
      return void(o << comparison_json(a, c).dump(2, ' ', false, format::kInvalidUtf8) << "\n");
    print_comparison(o, a, c);
  });
}

format::Json factors_json(const std::string& metric, const stats::FactorAnalysis& f) {
  format::Json j = stats::factor_analysis_json(f);
  j["metric"] = metric;
  return j;
}

void print_factors(std::ostream& o, const std::string& metric, const stats::FactorAnalysis& f) {
  std::string cells = f.balanced ? fmt::format("balanced, {} run(s) per cell", f.replicates)
                                 : std::string("unbalanced");
  o << fmt::format("{} by {} ({} runs, {}): components by {}\n", metric,
                   fmt::join(f.factors, " x "), f.n, cells, f.method);
  int pct = static_cast<int>(std::lround(100 * f.confidence));
  Table t({"TERM", "KIND", "LEVELS", "DF", "SS", "MS", "F", "p", "VARIANCE",
           fmt::format("{}% CI", pct), "SHARE", "REML", fmt::format("REML {}% CI", pct)});
  for (size_t c : {2, 3, 4, 5, 6, 7, 8, 10, 11}) t.align_right(c);
  for (const auto& term : f.terms) {
    const auto& an = term.anova;
    std::string f_text =
        an && an->f ? fmt::format("{} /{}", format::value(*an->f), an->f_denominator) : "-";
    bool fixed = term.fixed;
    t.add_row({term.name, fixed ? "fixed" : "random", std::to_string(term.levels),
               an ? format::value(an->df) : "-", an ? format::value(an->ss) : "-",
               an ? format::value(an->ms) : "-", f_text, an ? num(an->p_value) : "-",
               fixed ? "-" : format::value(term.variance),
               fixed ? "-" : interval(f.method == "ANOVA" ? term.anova_ci : term.reml_ci),
               fixed ? "-" : fmt::format("{:.1f}%", 100 * term.share), num(term.reml_estimate),
               interval(term.reml_ci)});
  }
  t.print(o);
  for (const auto& n : f.notes) o << "note: " << core::escape_for_display(n) << "\n";
}

stats::Interactions parse_interactions(const std::string& name) {
  if (name == "none") return stats::Interactions::kNone;
  if (name == "pairs") return stats::Interactions::kPairs;
  return stats::Interactions::kAuto;
}

void run_factors(store::Store& store, StatsArgs& a, std::vector<std::string> notes) {
  stats::FactorData data = stats::collect_factors(store, a.selection, a.by, notes);
  for (const auto& key : a.by)
    data.fixed.push_back(std::find(a.fixed.begin(), a.fixed.end(), key) != a.fixed.end());
  stats::FactorOptions options;
  options.interactions = parse_interactions(a.interactions);
  auto f = stats::analyse_factors(data, options);
  f.notes.insert(f.notes.begin(), notes.begin(), notes.end());
  write_output(a.out, [&](std::ostream& o) {
    if (a.format == "json")
      return void(o << factors_json(a.selection.metric, f).dump(2, ' ', false, format::kInvalidUtf8)
                    << "\n");
    print_factors(o, a.selection.metric, f);
  });
}

// Of the filter's finished runs, those every reader counts
// (study::counted_runs): a study's planned runs once each, never an attempt
// it set aside. Returns how many it left out.
size_t count_as_readers_do(store::Store& store, stats::Selection& s) {
  store::RunFilter f = s.filter;
  f.status = store::RunStatus::kFinished;
  const auto all = store.list_runs(f);
  s.only.emplace();
  for (const auto& r : study::counted_runs(store, all)) s.only->insert(r.uuid);
  return all.size() - s.only->size();
}

// Which of the three modes (groups, --compare, factors) the options ask
// for, refusing the combinations that mean nothing.
void check_modes(const StatsArgs& a) {
  auto usage = [](const std::string& what) { core::fail(core::ErrorKind::kUsage, "{}", what); };
  if (!a.compare.empty() && a.by.size() != 1)
    usage("--compare A B compares two groups of one --by KEY: give exactly one --by");
  if (a.compare.empty() &&
      (!std::isnan(a.delta) || a.compare_options.power != 0.8 || a.compare_options.alpha != 0.05))
    usage("--delta, --power and --alpha plan the runs of --compare A B: give --compare");
  for (const auto& key : a.fixed)
    if (std::find(a.by.begin(), a.by.end(), key) == a.by.end())
      usage("--fixed " + key + " is not one of the --by factors");
  if (a.by.size() < 2 && (!a.fixed.empty() || a.interactions != "auto"))
    usage("--fixed and --interactions describe two or more --by factors");
  if ((a.by.size() >= 2 || !a.compare.empty()) && a.format == "csv")
    usage("--format csv is for the per-group table: use text or json");
  if ((a.by.size() >= 2 || !a.compare.empty()) &&
      (!a.reference_run.empty() || !std::isnan(a.reference_value)))
    usage("--ref and --ref-run are for the per-group table (Diff%)");
}

void run_stats(Context& ctx, StatsArgs& a) {
  if (ctx.json) a.format = "json";
  check_modes(a);
  auto store = ctx.reader();
  a.selection.reduce = stats::parse_reduce(a.reduce);
  if (!a.parent.empty()) {
    const auto parent = store->resolve_run(a.parent);
    // A run that is no study's nor any run's parent: said as such, not as a
    // metric no run has (thirtieth hunt, A-D6).
    if (store->list_runs({.parent_uuid = parent.uuid, .limit = 1}).empty())
      core::fail(core::ErrorKind::kUsage,
                 "run {} ({}) has no child runs: --study takes a study (or --parent a run "
                 "with runs under it); `trainscope runs list` shows them",
                 core::short_uuid(parent.uuid), core::escape_for_display(parent.name));
    a.selection.filter.parent_uuid = parent.uuid;
  }
  // A run named twice counts once.
  std::vector<std::string> uuids;
  for (const auto& r : store->resolve_runs(a.selection.runs)) uuids.push_back(r.uuid);
  a.selection.runs = uuids;
  const size_t left_out = uuids.empty() ? count_as_readers_do(*store, a.selection) : 0;
  std::vector<std::string> notes;  // every mode says what it set aside
  if (left_out > 0)
    notes.push_back(fmt::format(
        "{} finished run(s) left out: attempts a study set aside ({}) or ran outside its plan",
        left_out, study::kSupersededTag));
  if (a.by.size() >= 2) return run_factors(*store, a, notes);
  a.selection.by = a.by.empty() ? "" : a.by.front();
  if (!a.compare.empty()) return run_compare(a, stats::collect(*store, a.selection), notes);
  if (!a.reference_run.empty()) {
    stats::Selection ref = a.selection;
    ref.runs = {a.reference_run};
    ref.by.clear();
    a.options.reference = stats::collect(*store, ref).front().value;
  } else if (!std::isnan(a.reference_value)) {
    a.options.reference = a.reference_value;
  }
  auto m = stats::analyse(a.selection.metric, stats::collect(*store, a.selection), a.options);
  m.notes.insert(m.notes.end(), notes.begin(), notes.end());
  write_output(a.out, [&](std::ostream& o) {
    if (a.format == "json")
      return void(o << stats::metric_stats_json(m).dump(2, ' ', false, format::kInvalidUtf8)
                    << "\n");
    if (a.format == "csv") return stats::metric_stats_csv(o, m);
    print_groups(o, m);
    if (m.comparison) print_comparison(o, *m.comparison);
    for (const auto& n : m.notes) o << "note: " << core::escape_for_display(n) << "\n";
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
  cmd->add_option("--by", a->by,
                  "Group by a param (optimizer.name, params.KEY), a tag (tags.KEY) or a run "
                  "attribute (experiment, status, host, ...), as --filter names them; two or "
                  "more: the variance components of the crossed factors")
      ->allow_extra_args(false);
  cmd->add_option("--compare", a->compare,
                  "Compare two groups of --by: P(A > B), mean difference, runs needed")
      ->expected(2);
  cmd->add_option("--delta", a->delta,
                  "Difference --compare plans the runs for (default: the observed one)")
      ->check(number_in(-1e300, 1e300));
  cmd->add_option("--power", a->compare_options.power, "Power the planned runs reach (0.8)")
      ->check(number_in(0.01, 0.9999));
  cmd->add_option("--alpha", a->compare_options.alpha, "Two-sided level of the planned test")
      ->check(number_in(1e-6, 0.5));
  cmd->add_option("--fixed", a->fixed, "A --by factor that is fixed, not random (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--interactions", a->interactions,
                  "Two-factor interactions: auto (when cells hold replicates), none or pairs")
      ->check(CLI::IsMember({"auto", "none", "pairs"}));
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
  set_example(cmd,
              "trainscope stats test/accuracy --study seeds --by optimizer.name\n"
              "  trainscope stats test/accuracy --by optimizer.name --compare adam sgd\n"
              "  trainscope stats test/accuracy --by optimizer.name --by seed --fixed "
              "optimizer.name");
  cmd->callback([&ctx, a] {
    core::check_output_file(a->out);  // before any work
    run_stats(ctx, *a);
  });
}

}  // namespace trainscope::cli
