// The command families of the `trainscope` executable. Each registers its
// subcommands on the root app; callbacks parse nothing more, call a library
// component, and print. Torch commands hand their parsed arguments to the
// torch half (torch_commands.h).
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <stdexcept>
#include <string>

#include "context.h"

namespace trainscope::cli {

// Commands that need libtorch (marked *) are parsed here and run by the
// torch half.
void register_runs_commands(CLI::App& app, Context& ctx);      // runs, metrics
void register_numerics_commands(CLI::App& app, Context& ctx);  // numerics logmap*, sum
void register_monitor_commands(CLI::App& app, Context& ctx);   // watch, resources, report
void register_train_commands(CLI::App& app, Context& ctx);     // train*, config*, eval*
void register_repro_commands(CLI::App& app, Context& ctx);    // env, diff*, rerun*, card, checklist
void register_profile_commands(CLI::App& app, Context& ctx);  // profile*, costmodel (predict*)
void register_stats_commands(CLI::App& app, Context& ctx);    // stats
void register_study_commands(CLI::App& app, Context& ctx);    // study run, resume, status, report
void register_probes_commands(CLI::App& app, Context& ctx);   // probes
void register_plot_commands(CLI::App& app, Context& ctx);     // plot
void register_completion_commands(CLI::App& app, Context& ctx);  // completion
void register_serve_commands(CLI::App& app, Context& ctx);       // serve
void register_store_commands(CLI::App& app, Context& ctx);       // store copy
void register_import_commands(CLI::App& app, Context& ctx);      // import tfevents

// `runs view`, a capability's view of a run (view_cmd.cc).
void add_view_command(CLI::App* runs, Context& ctx);

// `costmodel fit` and `costmodel eval` (torch-free: costmodel_cmd.cc).
struct CostmodelArgs;
void costmodel_fit(Context& ctx, const CostmodelArgs& args);
void costmodel_eval(Context& ctx, const CostmodelArgs& args);

// Appends the root's options (--store, --json, -v, ...) to the help of every
// subcommand; call after every command is registered.
void add_global_options_to_help(CLI::App& root);
// The root's --help lists the commands grouped by task (help.cc).
void group_commands_in_help(CLI::App& root);
// What `trainscope` alone prints: the three commands to start with.
void print_start(std::ostream& out);

// The whole command line as main() runs it: parse, run, turn an error
// into one line and its exit code. A warm study worker's child runs its
// job's `trainscope train ...` through it (study_cmd.cc).
int run_command_line(int argc, char** argv);

// Ends the process with `code` after printing `message` (if any) on stderr:
// how a command passes on a watched program's exit code.
struct Exit : std::runtime_error {
  Exit(int c, const std::string& message) : std::runtime_error(message), code(c) {}
  int code;
};

}  // namespace trainscope::cli
