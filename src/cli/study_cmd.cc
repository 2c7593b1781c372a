// `trainscope study run | resume | status | report`: many trainings of one
// config, in parallel worker processes, and what their spread says.
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <limits>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/study/json.h"
#include "trainscope/study/report.h"
#include "trainscope/study/study.h"

namespace trainscope::cli {

namespace {

struct StudyArgs {
  std::string file, study, logs, out, format = "html", name;
  bool quick = false, no_weights = false, replan = false, cold = false;
  uint64_t max_runs = study::kDefaultMaxRuns;
  int workers = 0;
  std::string executor = "local", partition;
  int array_parallelism = 0;
};

study::StudyOptions options(Context& ctx, const StudyArgs& a) {
  study::StudyOptions o;
  // The URI as given (describe() leaves out a password and options): the
  // runner hands it to the trainings, a password only in their environment.
  o.store_uri = ctx.store_uri.empty() ? store::default_store_uri() : ctx.store_uri;
  o.program = std::filesystem::read_symlink("/proc/self/exe");
  o.log_dir = a.logs;
  o.workers = a.workers;
  o.executor = a.executor;
  o.partition = a.partition;
  o.array_parallelism = a.array_parallelism;
  o.quick = a.quick;
  o.warm = !a.cold;
  o.command_line = ctx.argv_line;
  o.max_runs = a.max_runs;
  o.replan = a.replan;
  return o;
}

// One line per event; on a terminal the line is rewritten in place.
study::ProgressFn progress_printer() {
  const bool tty = isatty(STDERR_FILENO);
  return [tty](const study::Progress& p) {
    std::string eta = p.eta_s >= 0 ? format::duration(p.eta_s) : "?";
    std::string line =
        fmt::format("[{:>3}/{}] {} running, {} failed, {} retried, {} elapsed, ETA {}  {}", p.done,
                    p.total, p.running, p.failed, p.retried, format::duration(p.elapsed_s), eta,
                    core::terminal_text(p.event));
    if (core::verbosity() < core::Verbosity::kNormal) return;
    std::cerr << (tty ? "\r\033[K" : "") << line << (tty ? "" : "\n") << std::flush;
    if (tty && p.running == 0 && p.done + p.failed == p.total) std::cerr << "\n";
  };
}

void add_max_runs(CLI::App* cmd, StudyArgs& a) {
  cmd->add_option("--max-runs", a.max_runs,
                  "Run a plan of up to this many runs (larger plans are refused with their size "
                  "and estimated time)")
      ->check(integer_in(1, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
}

// The study's name for the line about a cut output (core/output.h); its
// trainings print into their logs, not here.
void note_study(store::Store& store, const std::string& uuid) {
  std::string name;
  try {
    if (const auto run = store.find_run(uuid)) name = run->name;
  } catch (const std::exception&) {
    // The UUID alone says which study.
  }
  core::note_recorded(fmt::format("the study {}({}) and its runs were recorded in full",
                                  name.empty() ? "" : core::escape_for_display(name) + " ",
                                  core::short_uuid(uuid)));
}

void finish(Context& ctx, const study::Outcome& o) {
  note_study(*ctx.store(), o.study);
  // Ends the progress line; -q printed none (and a closed stderr is then
  // not written to: core/output.h).
  if (core::verbosity() >= core::Verbosity::kNormal) std::cerr << "\n";
  std::cout << "study " << o.study << ": " << o.progress.done << "/" << o.progress.total
            << " runs finished, " << o.progress.failed << " failed\n";
  if (o.complete()) return;
  const std::string id = core::short_uuid(o.study);
  if (o.progress.elsewhere > 0)
    core::fail(core::ErrorKind::kRuntime,
               "study {} is incomplete: {} planned run(s) were left alone because another "
               "process is training them now ({}); when it ends, `trainscope study resume {}` "
               "runs what is left",
               id, o.progress.elsewhere, o.progress.elsewhere_first, id);
  if (o.progress.recorded_nothing > 0)
    core::fail(core::ErrorKind::kRuntime,
               "study {} is incomplete: {} of {} planned runs ended without recording a run "
               "({}); fix that, then `trainscope study resume {}` runs what is left",
               id, o.progress.recorded_nothing, o.progress.total, o.progress.recorded_nothing_first,
               id);
  core::fail(core::ErrorKind::kRuntime,
             "study {} is incomplete: `trainscope study resume {}` runs what is left", id, id);
}

// Where the trainings run: here, or as a Slurm job array.
void add_executor_options(CLI::App* cmd, StudyArgs& a) {
  cmd->add_option("--executor", a.executor, "local (this machine) or slurm (sbatch job arrays)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cmd->add_flag("--cold", a.cold,
                "local: start every training as a new process instead of forking it from a "
                "worker that loaded libtorch and the dataset once (same results, slower)");
  cmd->add_option("--partition", a.partition, "slurm: the partition (default: the cluster's)");
  cmd->add_option("--array-parallelism", a.array_parallelism,
                  "slurm: tasks of the array running at once (default: no limit)")
      ->check(CLI::Range(1, 100000));
}

void add_run(CLI::App* study, Context& ctx) {
  auto* cmd = study->add_subcommand("run", "Run every training of a study file");
  auto a = std::make_shared<StudyArgs>();
  cmd->add_option("STUDY", a->file, "Study file (see configs/studies/)")->required();
  cmd->add_flag("--quick", a->quick, "Apply the file's quick: section (minutes, not hours)");
  cmd->add_option("--workers,-j", a->workers, "Trainings at once (default: cores / threads)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--logs", a->logs, "Folder for the runs' output (default trainscope-studies/)");
  add_executor_options(cmd, *a);
  add_max_runs(cmd, *a);
  set_example(cmd,
              "trainscope study run configs/studies/seeds.yaml --quick --workers 2\n"
              "  trainscope --store postgresql://me@db/ts study run configs/studies/seeds.yaml "
              "--executor slurm --partition gpu --array-parallelism 8");
  cmd->callback([&ctx, a] {
    // The worker starts first: it loads libtorch while this process plans
    // (which needs no libtorch).
    study::StudyOptions o = options(ctx, *a);
    study::StudySpec loaded = study::load_study(a->file, a->quick);
    study::start_early_worker(loaded, o);
    auto store = ctx.store();
    study::StudySpec spec = study::plan_study(*store, std::move(loaded), o);
    study::check_name_free(*store, spec);  // before the plan is printed
    core::log_info("study {}: {}", spec.name,
                   study::estimate_text(study::estimate_plan(*store, spec, o)));
    finish(ctx, study::run_study(store, spec, o, progress_printer()));
  });
}

void add_resume(CLI::App* study, Context& ctx) {
  auto* cmd = study->add_subcommand("resume", "Run what a study has not finished");
  auto a = std::make_shared<StudyArgs>();
  cmd->add_option("STUDY", a->study, "Study name or UUID (prefix)")->required();
  cmd->add_option("--workers,-j", a->workers, "Trainings at once")->check(CLI::Range(1, 1024));
  cmd->add_option("--logs", a->logs, "Folder for the runs' output");
  cmd->add_flag("--replan", a->replan,
                "Plan again from the study's files as they are now (when they changed since the "
                "study was planned); finished runs the new plan does not train are set aside");
  add_executor_options(cmd, *a);
  add_max_runs(cmd, *a);
  set_example(cmd, "trainscope study resume seeds");
  cmd->callback([&ctx, a] {
    finish(ctx, study::resume_study(ctx.store(), a->study, options(ctx, *a), progress_printer()));
  });
}

// What one Slurm task runs: the training its planned run needs now.
void add_task(CLI::App* study, Context& ctx) {
  auto* cmd = study->add_subcommand(
      "task", "Run one planned training of a study now (what a Slurm array task runs)");
  auto a = std::make_shared<StudyArgs>();
  cmd->add_option("STUDY", a->study, "Study name or UUID")->required();
  cmd->add_option("NAME", a->name, "The planned run's name, e.g. optimizer.name=adam/r2")
      ->required();
  set_example(cmd, "trainscope study task seeds optimizer.name=adam/r2");
  cmd->callback([&ctx, a] {
    study::StudyOptions o = options(ctx, *a);
    auto job = study::planned_task(*ctx.store(), a->study, a->name, o);
    if (!job) {
      std::cout << core::escape_for_display(a->name) << " has finished already\n";
      return;
    }
    // A command study's run learns what it is from its environment.
    for (const auto& [k, v] : job->env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv = core::exec_argv(job->argv);
    core::reset_signals_for_exec();  // the training's SIGPIPE as a shell gives it
    execv(argv[0], argv.data());
    core::fail(core::ErrorKind::kCommandNotFound, "cannot run {}", job->argv[0]);
  });
}

// "Slurm (jobs 12, 15): 2 RUNNING, 3 PENDING" beside the store's counts.
void print_slurm(const study::StudyStatus& s) {
  std::cout << "Slurm (array jobs "
            << core::escape_for_display(fmt::format("{}", fmt::join(s.slurm_jobs, ", "))) << "): ";
  if (!s.slurm_error.empty()) {
    std::cout << "cannot ask: " << core::terminal_text(s.slurm_error) << "\n";
  } else if (s.slurm_queue.empty()) {
    std::cout << "no task queued or running\n";
  } else {
    std::vector<std::string> parts;
    for (const auto& [state, n] : s.slurm_queue) parts.push_back(fmt::format("{} {}", n, state));
    std::cout << fmt::format("{}", fmt::join(parts, ", ")) << "\n";
  }
}

void add_status(CLI::App* study, Context& ctx) {
  auto* cmd =
      study->add_subcommand("status", "Planned, finished, running and failed runs per cell");
  auto a = std::make_shared<StudyArgs>();
  cmd->add_option("STUDY", a->study, "Study name or UUID (prefix)")->required();
  set_example(cmd, "trainscope study status seeds");
  cmd->callback([&ctx, a] {
    auto s = study::study_status(*ctx.reader(), a->study);
    if (ctx.json) {
      return void(std::cout << study::study_status_json(s).dump(2, ' ', false, format::kInvalidUtf8)
                            << "\n");
    }
    std::cout << "study " << core::escape_for_display(s.study.name) << " ("
              << core::short_uuid(s.study.uuid) << "), " << s.liveness.status
              << (s.liveness.stale() ? " (" + core::terminal_text(s.liveness.note) + ")" : "")
              << "\n";
    const bool stale = s.total.stale > 0;  // the column only when some run is
    std::vector<std::string> head = {"CELL", "PLANNED", "FINISHED", "RUNNING", "FAILED", "PENDING"};
    if (stale) head.insert(head.begin() + 4, "STALE");
    Table t(head);
    for (size_t c = 1; c < head.size(); ++c) t.align_right(c);
    auto row = [&](const study::CellStatus& c) {
      std::vector<std::string> r = {c.cell,
                                    std::to_string(c.planned),
                                    std::to_string(c.finished),
                                    std::to_string(c.running),
                                    std::to_string(c.failed),
                                    std::to_string(c.pending)};
      if (stale) r.insert(r.begin() + 4, std::to_string(c.stale));
      t.add_row(r);
    };
    for (const auto& c : s.cells) row(c);
    row(s.total);
    t.print(std::cout);
    if (s.mean_run_s > 0) std::cout << "mean run " << format::duration(s.mean_run_s) << "\n";
    if (s.recorded_nothing > 0)
      std::cout << s.recorded_nothing << " failed run(s) recorded nothing: "
                << core::escape_for_display(s.recorded_nothing_example) << "\n";
    if (s.gave_up > 0)
      std::cout << s.gave_up
                << " planned run(s) given up: " << core::escape_for_display(s.gave_up_example)
                << "\n";
    if (s.set_aside > 0)
      std::cout << s.set_aside
                << " run(s) set aside, counted by no reader (older attempts, or runs the plan no "
                   "longer trains)\n";
    if (!s.slurm_jobs.empty()) print_slurm(s);
  });
}

// The options of a study report, on `study report` and on `report STUDY`.
void add_report_options(CLI::App* cmd, StudyArgs& a) {
  cmd->add_option("--format,-f", a.format, "html, md or json")
      ->check(CLI::IsMember({"html", "md", "json"}));
  cmd->add_option("--out,-o", a.out, "Write to this file (default: stdout)");
  cmd->add_flag("--no-weights", a.no_weights,
                "Skip the weight spread across runs (reads every checkpoint)");
}

void write_report(Context& ctx, const StudyArgs& a) {
  core::check_output_file(a.out);  // before the analysis, which reads every run
  auto store = ctx.reader();
  study::StudyAnalysis an = study::analyse_study(*store, a.study);
  if (!a.no_weights) an.weights = torch_commands().weight_spread(ctx, an);
  std::string fmt_name = ctx.json ? "json" : a.format;
  write_output(a.out, [&](std::ostream& o) {
    if (fmt_name == "json")
      o << study::study_analysis_json(an).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    else if (fmt_name == "md")
      o << study::markdown_report(an);
    else
      o << study::html_report(an);
  });
}

void add_report(CLI::App* study, Context& ctx) {
  auto* cmd =
      study->add_subcommand("report", "Statistics of a study: HTML (SVG plots), Markdown, JSON");
  auto a = std::make_shared<StudyArgs>();
  cmd->add_option("STUDY", a->study, "Study name or UUID (prefix)")->required();
  add_report_options(cmd, *a);
  set_example(cmd, "trainscope study report seeds --format html --out seeds.html");
  cmd->callback([&ctx, a] { write_report(ctx, *a); });
}

// `trainscope report STUDY`: the same report from the top-level `report`
// command, whose other forms are subcommands (`report throughput ...`).
void add_top_level_report(CLI::App& app, Context& ctx) {
  CLI::App* report = app.get_subcommand("report");
  report->require_subcommand(0, 1);
  auto a = std::make_shared<StudyArgs>();
  report->add_option("STUDY", a->study, "A study (name or UUID prefix): its report");
  add_report_options(report, *a);
  set_example(report, "trainscope report seeds --format html --out seeds.html");
  report->callback([&ctx, a, report] {
    if (!report->get_subcommands().empty()) return;
    if (a->study.empty()) throw CLI::RequiredError("STUDY (or a subcommand such as throughput)");
    write_report(ctx, *a);
  });
}

}  // namespace

// Not for users: the warm worker a local study forks its trainings from
// (study/executor.h). It loads the torch half and the base config's
// dataset, then runs each job's command line in a forked child.
void add_worker(CLI::App* study) {
  auto* cmd = study->add_subcommand("worker", "")->group("");  // hidden
  auto fd = std::make_shared<int>(-1);
  cmd->add_option("--fd", *fd, "The socket to read jobs from")->required();
  cmd->callback([fd] {
    const auto run = [](const std::vector<std::string>& args) {
      std::vector<char*> argv = core::exec_argv(args);
      return run_command_line(static_cast<int>(args.size()), argv.data());
    };
    TorchCommands& torch = torch_commands();  // libtorch loads while the study plans
    study::serve_jobs(
        *fd, [&](const study::Warm& w) { torch.warm(w.config, w.sets, run); },
        [run](const study::Job& job) { return run(job.argv); });
  });
}

void register_study_commands(CLI::App& app, Context& ctx) {
  auto* study = app.add_subcommand(
      "study", "Many trainings in parallel, and how much of a result is noise (configs/studies/)");
  study->require_subcommand(1);
  set_example(study, "trainscope study run configs/studies/sources.yaml --quick");
  add_run(study, ctx);
  add_resume(study, ctx);
  add_status(study, ctx);
  add_task(study, ctx);
  add_worker(study);
  add_report(study, ctx);
  add_top_level_report(app, ctx);
}

}  // namespace trainscope::cli
