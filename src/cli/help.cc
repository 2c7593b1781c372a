// The top-level help a newcomer can follow: the commands grouped by task,
// in the order one meets them, and `trainscope` alone printing the three
// commands to start with (issue 34).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"

namespace trainscope::cli {
namespace {

// Every command by task. A command missing here is listed under "Other",
// so a new command is never hidden (cli_test checks none is).
const std::vector<std::pair<std::string, std::vector<std::string>>>& groups() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> g = {
      {"Train", {"train", "config", "watch", "eval", "weights", "rerun"}},
      {"Inspect runs", {"runs", "metrics", "plot", "resources", "probes", "card", "checklist"}},
      {"Compare and explain", {"diff", "stats", "report", "env"}},
      {"Measure speed and numerics", {"profile", "costmodel", "tune", "numerics"}},
      {"Studies (many trainings)", {"study"}},
      {"Stores and the dashboard", {"serve", "store", "import"}},
      {"Shell", {"completion"}},
  };
  return g;
}

// The root's command list in the groups' order; subcommands keep CLI11's.
class GroupedFormatter : public CLI::Formatter {
 public:
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const override {
    if (app->get_parent() != nullptr) return CLI::Formatter::make_subcommands(app, mode);
    std::string out;
    std::set<std::string> listed;
    auto section = [&](const std::string& title, const std::vector<std::string>& names) {
      std::string rows;
      for (const auto& name : names)
        for (const CLI::App* sub : app->get_subcommands({}))
          if (sub->get_name() == name && listed.insert(name).second) rows += make_subcommand(sub);
      if (!rows.empty()) out += "\n" + title + ":\n" + rows;
    };
    for (const auto& [title, names] : groups()) section(title, names);
    std::vector<std::string> rest;
    for (const CLI::App* sub : app->get_subcommands({}))
      if (!listed.count(sub->get_name())) rest.push_back(sub->get_name());
    section("Other", rest);
    return out;
  }
};

}  // namespace

void group_commands_in_help(CLI::App& root) {
  root.formatter(std::make_shared<GroupedFormatter>());
}

void print_start(std::ostream& out) {
  out << "trainscope: measurable, reproducible neural-network training\n\n"
         "Start with:\n"
         "  trainscope train configs/demo.yaml   train the demo CNN and record the run\n"
         "  trainscope runs list                 what is recorded, newest first\n"
         "  trainscope serve                     the dashboard: curves, ranks, profiles, studies\n"
         "\n`trainscope --help` lists every command by task; `trainscope COMMAND --help` one.\n";
}

}  // namespace trainscope::cli
