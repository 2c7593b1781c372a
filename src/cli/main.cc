// trainscope: the command-line entry point. Every error thrown below is
// caught here once and turned into one line on stderr and an exit code;
// this is the only place where an error's kind becomes an exit code.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/version.h"

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

void add_global_flags(CLI::App& app, Context& ctx) {
  app.set_version_flag("--version",
                       fmt::format("trainscope {} ({})", core::version(), core::build_commit()));
  app.require_subcommand(1);
  app.fallthrough();
  app.option_defaults()->always_capture_default();
  app.add_option("--store", ctx.store_uri,
                 "Store location, sqlite:PATH (default: $TRAINSCOPE_STORE or "
                 "sqlite:./trainscope.db)");
  app.add_flag("--json", ctx.json, "Machine-readable JSON output");
  // Read from argv before parsing (set_verbosity_from); declared for --help.
  app.add_flag("-v,--verbose")->description("More diagnostics on stderr");
  app.add_flag("-q,--quiet")->description("Only errors on stderr");
  set_example(&app, "trainscope runs list --status running --limit 10");
}

// Verbosity must be in force before any command callback runs, so it is
// read from argv up front; the flags above document it in --help.
void set_verbosity_from(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a == "--") break;
    if (a == "-v" || a == "--verbose") core::set_verbosity(core::Verbosity::kVerbose);
    if (a == "-q" || a == "--quiet") core::set_verbosity(core::Verbosity::kQuiet);
  }
}

int run(int argc, char** argv) {
  Context ctx;
  for (int i = 0; i < argc; ++i) ctx.argv_line += (i ? " " : "") + std::string(argv[i]);
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
  set_verbosity_from(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Exit& e) {
    std::cout.flush();
    if (*e.what()) std::cerr << "trainscope: " << e.what() << "\n";
    return e.code;
  } catch (const core::Error& e) {
    std::cout.flush();
    std::cerr << "trainscope: " << e.what() << "\n";
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "trainscope: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace trainscope::cli

int main(int argc, char** argv) { return trainscope::cli::run(argc, argv); }
