// trainscope: the command-line entry point. Every error thrown below is
// caught here once and turned into one line on stderr and an exit code.
#include <CLI/CLI.hpp>

#include <csignal>
#include <iostream>

#include "context.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/version.h"

namespace trainscope::cli {
using core::Error;
using core::Verbosity;
using core::build_commit;
using core::set_verbosity;
using core::version;
using store::Store;
using store::StoreOptions;


std::shared_ptr<Store> Context::store() {
  if (!store_) {
    StoreOptions o;
    o.uri = store_uri;
    store_ = Store::open(o);
  }
  return store_;
}

}  // namespace trainscope::cli

int main(int argc, char** argv) {
  using namespace trainscope::core;
  using namespace trainscope::store;
  namespace cli = trainscope::cli;
  cli::Context ctx;
  for (int i = 0; i < argc; ++i) ctx.argv_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"trainscope: measurable, reproducible neural-network training"};
  app.set_version_flag("--version", fmt::format("trainscope {} ({})", version(), build_commit()));
  app.require_subcommand(1);
  app.fallthrough();
  app.option_defaults()->always_capture_default();
  app.add_option("--store", ctx.store_uri,
                 "Store location, sqlite:PATH (default: $TRAINSCOPE_STORE or "
                 "sqlite:./trainscope.db)");
  app.add_flag("--json", ctx.json, "Machine-readable JSON output");
  bool verbose = false, quiet = false;
  app.add_flag("-v,--verbose", verbose, "More diagnostics on stderr");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");
  cli::set_example(&app, "trainscope runs list --status running --limit 10");

  cli::register_runs_commands(app, ctx);
  cli::register_numerics_commands(app, ctx);
  cli::register_monitor_commands(app, ctx);
#ifdef TRAINSCOPE_WITH_TORCH
  cli::register_train_commands(app, ctx);
  cli::register_repro_commands(app, ctx);
  cli::register_profile_commands(app, ctx);
  cli::register_costmodel_commands(app, ctx);
#endif

  // Verbosity must be in force before any command callback runs, so it is
  // read from argv up front; the flags above document it in --help.
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a == "--") break;
    if (a == "-v" || a == "--verbose") set_verbosity(Verbosity::kVerbose);
    if (a == "-q" || a == "--quiet") set_verbosity(Verbosity::kQuiet);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::cout.flush();
    std::cerr << "trainscope: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "trainscope: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
