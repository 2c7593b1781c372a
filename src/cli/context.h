// State shared by every CLI command: global flags and the store they name.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "trainscope/store/store.h"

namespace trainscope::cli {

struct Context {
  std::string store_uri;  // --store; empty means $TRAINSCOPE_STORE or the default
  bool json = false;      // --json
  std::string argv_line;  // the command line, recorded with new runs

  // Opens the store once per process; later calls return the same handle.
  std::shared_ptr<store::Store> store();

 private:
  std::shared_ptr<store::Store> store_;
};

// Each command family registers its subcommands on the root app.
void register_runs_commands(CLI::App& app, Context& ctx);
void register_numerics_commands(CLI::App& app, Context& ctx);
void register_monitor_commands(CLI::App& app, Context& ctx);
// Defined only when trainscope is built with libtorch.
void register_train_commands(CLI::App& app, Context& ctx);
void register_repro_commands(CLI::App& app, Context& ctx);
void register_profile_commands(CLI::App& app, Context& ctx);
void register_costmodel_commands(CLI::App& app, Context& ctx);

// Appends "Example:\n  <example>" to a command's help.
inline void set_example(CLI::App* cmd, const std::string& example) {
  cmd->footer("\nExample:\n  " + example + "\n");
}

}  // namespace trainscope::cli
