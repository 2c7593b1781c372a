// trainscope: the command-line entry point. Every error thrown below is
// caught here once and turned into one line on stderr and an exit code;
// this is the only place where an error's kind becomes an exit code.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <new>
#include <string>
#include <string_view>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/core/version.h"
#include "trainscope/dist/rendezvous.h"

namespace trainscope::cli {
namespace {

int exit_code(core::ErrorKind kind) {
  switch (kind) {
    case core::ErrorKind::kUsage:
      return 2;
    case core::ErrorKind::kNotFound:
      return 3;
    case core::ErrorKind::kConflict:
      return 4;
    case core::ErrorKind::kStore:
      return 5;
    case core::ErrorKind::kCommandNotFound:
      return 127;  // as the shell
    case core::ErrorKind::kRuntime:
      return 1;
  }
  return 1;
}

// Writes an error's line where it is said: on stderr, or, in a rank of a
// local `train --nproc N`, into the pipe its launcher reads
// (dist::kErrorFdVar), which says one line for all its ranks. Its control
// characters escaped (core::terminal_text): a stored name inside sets no
// terminal's title.
void emit_error(const std::string& line) {
  const std::string text = core::terminal_text(line);
  if (const char* var = std::getenv(dist::kErrorFdVar)) {
    int fd = -1;
    const std::string_view v(var);
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), fd);
    const size_t n = std::min<size_t>(text.size(), dist::kMaxErrorLine);
    if (ec == std::errc() && end == v.data() + v.size() && fd > 2 &&
        core::write_fully(fd, std::string_view(text).substr(0, n)) == 0)
      return;
  }
  std::cerr << text;
}

// An error's message as the user sees it: its first line, and the rest
// (a library's backtrace, say) only with -v. trainscope's own messages
// (core::Error, Exit) are one line already, whatever text they embed.
void print_error(std::string_view prefix, std::string_view what) {
  std::cout.flush();
  const size_t nl = what.find_first_of("\r\n");
  if (nl == std::string_view::npos || core::verbosity() >= core::Verbosity::kVerbose)
    return emit_error(fmt::format("trainscope: {}{}\n", prefix, what));
  emit_error(
      fmt::format("trainscope: {}{} (-v shows the full message)\n", prefix, what.substr(0, nl)));
}

// The command that runs: its words after `trainscope` ("study run").
std::string command_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* a = &app; !a->get_subcommands().empty();) {
    a = a->get_subcommands().front();
    path += (path.empty() ? "" : " ") + a->get_name();
  }
  return path;
}

// --json on a command that writes no JSON (a document, a program's output,
// a server) is refused rather than ignored: a script that asked for JSON
// would read text. Each is named with what it writes instead.
void check_json(const CLI::App& app) {
  static const std::map<std::string, std::string> kNoJson = {
      {"card", "a Model Card in Markdown"},
      {"completion", "a shell script"},
      {"config keys", "a table; `trainscope config show --json` prints a config as JSON"},
      {"costmodel fit", "a cost model file, which is JSON"},
      {"profile grid", "runs; `trainscope profile show RUN --json` reads each"},
      {"rerun", "a run; `trainscope runs show RUN --json` reads it"},
      {"runs delete", "nothing"},
      {"serve", "the dashboard, whose API answers JSON"},
      {"store copy", "a store"},
      {"study resume", "runs; `trainscope study status STUDY --json` reads them"},
      {"study run", "runs; `trainscope study status STUDY --json` reads them"},
      {"study task", "a run; `trainscope study status STUDY --json` reads it"},
      {"study worker", "runs"},
      {"watch", "a run; `trainscope runs show RUN --json` reads it"},
      {"weights", "a PyTorch state dict"}};
  const std::string path = command_path(app);
  if (auto it = kNoJson.find(path); it != kNoJson.end())
    core::fail(core::ErrorKind::kUsage,
               "--json: `trainscope {}` writes no JSON output (it writes {}); leave --json out",
               path, it->second);
}

// An option or argument given an empty value (`--status "$S"`, `metrics
// RUN "$K"` with S or K unset) is refused before any command runs: every
// command took it as left out and answered for everything (thirtieth hunt,
// A-D1; its positionals, thirty-first hunt, A-D1). --store, --bind and
// store copy's SRC and DST say more about theirs; a watched COMMAND's
// arguments are the program's own.
void check_empty_values(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0 || opt->get_items_expected_max() == 0) continue;  // a flag: no value
    const bool positional = !opt->nonpositional();
    const std::string name = positional                  ? opt->get_name(true)
                             : opt->get_lnames().empty() ? "-" + opt->get_snames()[0]
                                                         : "--" + opt->get_lnames()[0];
    if (name == "--store" || name == "--bind" || name == "SRC" || name == "DST" ||
        name == "COMMAND")
      continue;
    for (const auto& value : opt->results())
      if (value.empty())
        core::fail(core::ErrorKind::kUsage,
                   "{} '': an empty value (a variable that is not set?); give a value{}", name,
                   positional ? "" : ", or leave the option out");
  }
  for (const CLI::App* sub : app.get_subcommands()) check_empty_values(*sub);
}

void add_global_flags(CLI::App& app, Context& ctx) {
  app.set_version_flag("--version",
                       fmt::format("trainscope {} ({})", core::version(), core::build_commit()));
  app.require_subcommand(1);
  app.fallthrough();
  app.option_defaults()->always_capture_default();
  auto* store = app.add_option("--store", ctx.store_uri,
                               "Store location, sqlite:PATH or postgresql://USER@HOST:PORT/DB "
                               "(default: $TRAINSCOPE_STORE or sqlite:./trainscope.db)")
                    ->type_name("URI");
  // Before any command runs: an empty name is a mistake (a variable that
  // is not set), never a request for the default store.
  app.parse_complete_callback([store, &ctx, &app] {
    if (ctx.json) check_json(app);
    check_empty_values(app);
    if (store->count() > 0 && ctx.store_uri.empty())
      core::fail(core::ErrorKind::kUsage,
                 "--store '' names no store; give sqlite:PATH or postgresql://USER@HOST:PORT/DB, "
                 "or leave --store out for $TRAINSCOPE_STORE or sqlite:./trainscope.db");
    const char* env = std::getenv("TRAINSCOPE_STORE");
    if (store->count() == 0 && env && !*env)
      core::fail(core::ErrorKind::kUsage,
                 "TRAINSCOPE_STORE is set but empty; unset it for sqlite:./trainscope.db, or set "
                 "it to sqlite:PATH or postgresql://USER@HOST:PORT/DB");
  });
  app.add_flag("--json", ctx.json, "Machine-readable JSON output");
  // Option callbacks run while parsing, before any command's callback.
  app.add_flag_callback(
      "-v,--verbose", [] { core::set_verbosity(core::Verbosity::kVerbose); },
      "More diagnostics on stderr");
  app.add_flag_callback(
      "-q,--quiet", [] { core::set_verbosity(core::Verbosity::kQuiet); }, "Only errors on stderr");
  set_example(&app, "trainscope runs list --status running --limit 10");
  app.footer(
      app.get_footer() +
      "\nExit codes: 0 success; 1 the job failed (training diverged, a check found a difference);\n"
      "  2 usage or bad input (arguments, config, data files), or output that could not be\n"
      "  written (a closed pipe, a full disk: the command ran to its end and recorded its runs\n"
      "  all the same); 3 not found (run, key, file); 4 conflict (ambiguous reference, changed\n"
      "  value, run still running); 5 store error (cannot open, read or write; damaged\n"
      "  artifact); 127 a command to run does not exist; 141 a command that records nothing\n"
      "  stopped quietly because the program reading its output did (`| head -1`).");
}

// The command of `app` called `word`, or a usage error naming it (as
// `path`), with the nearest real one and where the list is.
const CLI::App* command_named(const CLI::App& app, const std::string& word, const std::string& path,
                              const std::string& help) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word) return sub;
    size_t d = core::edit_distance(word, sub->get_name());
    if (d < best_d) best_d = d, best = sub->get_name();
  }
  core::fail(core::ErrorKind::kUsage, "unknown command '{}'{}; `{}` lists the commands", path,
             best_d <= 3 ? fmt::format(" (did you mean '{}'?)", best) : "", help);
}

// The first word that is not a global option must be a command: a mistyped
// one is named, with the nearest real command; and so must the word after a
// command that needs one of its own (`runs import`: "A subcommand is
// required" once; thirtieth hunt, A-D8).
void check_command(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a(argv[i]);
    if (a == "--store") ++i;  // its value follows
    if (a.empty() || a[0] == '-') continue;
    const CLI::App* cmd = command_named(app, a, a, "trainscope --help");
    std::string path = a;
    while (cmd->get_require_subcommand_min() > 0 && ++i < argc && argv[i][0] != '\0' &&
           argv[i][0] != '-') {
      const std::string word(argv[i]);
      cmd = command_named(*cmd, word, path + " " + word, "trainscope " + path + " --help");
      path += " " + word;
    }
    return;
  }
}

}  // namespace

namespace {

// Parses the command line and runs its command: every error becomes one line
// on stderr and its exit code.
int parse_and_run(CLI::App& app, int argc, char** argv) {
  if (argc == 1) {  // a newcomer's first try: where to start, not an error
    print_start(std::cout);
    return 0;
  }
  try {
    check_command(app, argc, argv);
    // Units built outside trainscope (TRAINSCOPE_UNITS) register their
    // config sections before any config is read, torch-free commands'
    // (config show, study plans) too: their libraries link libtorch, so
    // the torch half loads first and loads them.
    if (const char* units = std::getenv("TRAINSCOPE_UNITS"); units && *units) torch_commands();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every argument error is a usage error,
    // reported in one line like every other error.
    if (e.get_exit_code() == 0) return app.exit(e);
    // CLI11 quotes the argument as given: a line feed in it is escaped.
    emit_error(fmt::format("trainscope: {}; `--help` lists the options\n",
                           core::terminal_text(e.what(), true)));
    return exit_code(core::ErrorKind::kUsage);
  } catch (const Exit& e) {
    std::cout.flush();
    if (*e.what()) print_error("", core::terminal_text(e.what(), true));
    return e.code;
  } catch (const core::Error& e) {
    print_error("", e.what());
    return exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    print_error("",
                "out of memory: the command needed more memory than this process may use; "
                "lower the sizes it works on (batch, model, data, --n)");
    return 1;
  } catch (const std::exception& e) {
    // Not one of ours (libtorch's c10::Error, std::bad_alloc, ...): a
    // defect to report, in one line; its text may hold a stack trace.
    print_error("internal error: ", e.what());
    return 1;
  } catch (...) {
    print_error("internal error: ", "an exception that is not a std::exception");
    return 1;
  }
  return 0;
}

// Output is not the run (core/output.h): a command whose stdout or stderr
// failed (a closed pipe, a full disk) ran to its end and recorded all it
// records; one line says which output was cut and what was recorded. A
// command that succeeded otherwise exits 2: its output is not all there. A
// command that failed keeps its own code (watch: the program's).
int check_output(int code) {
  if (code == 0 && core::only_a_reader_left()) return 128 + SIGPIPE;
  if (!core::report_output_cut()) return code;
  return code == 0 ? exit_code(core::ErrorKind::kUsage) : code;
}

}  // namespace

int run_command_line(int argc, char** argv) {
  Context ctx;
  // Each word shell-quoted as it needs: pasted, the line runs what ran
  // (thirty-second hunt, A-D1: `'c d.yaml'` was recorded as two words).
  ctx.argv_line = core::shell_command(std::vector<std::string>(argv, argv + argc));
  CLI::App app{"trainscope: measurable, reproducible neural-network training"};
  add_global_flags(app, ctx);
  register_runs_commands(app, ctx);
  register_numerics_commands(app, ctx);
  register_monitor_commands(app, ctx);
  register_train_commands(app, ctx);
  register_repro_commands(app, ctx);
  register_profile_commands(app, ctx);
  register_stats_commands(app, ctx);
  register_study_commands(app, ctx);
  register_probes_commands(app, ctx);
  register_plot_commands(app, ctx);
  register_serve_commands(app, ctx);
  register_store_commands(app, ctx);
  register_import_commands(app, ctx);
  register_completion_commands(app, ctx);
  add_global_options_to_help(app);
  group_commands_in_help(app);
  return check_output(parse_and_run(app, argc, argv));
}

}  // namespace trainscope::cli

int main(int argc, char** argv) {
  // Before anything is printed or started: SIGPIPE, closed descriptors and
  // std::cout/std::cerr guarded, so that no output ends a command.
  trainscope::core::guard_standard_output();
  const int code = trainscope::cli::run_command_line(argc, argv);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
  // Every store is closed and every output written and checked by now; a
  // command that loaded the torch half (a study's own process and its worker
  // among them) saves the 0.2 s libtorch's static destructors take.
  // Sanitized builds exit normally, so that LeakSanitizer still checks.
  trainscope::core::exit_now(code);
#endif
  return code;
}
