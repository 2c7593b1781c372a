// `trainscope train`, `trainscope config ...`, `trainscope eval`: parsed here;
// train and eval run by the torch half. The config component is torch-free,
// so `config show` and `config keys` run here without loading libtorch.
#include <filesystem>
#include <iostream>
#include <string_view>
#include <utility>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::cli {

namespace {

// Before the torch half loads: a --code path that names nothing is refused
// at once, rather than after libtorch's start-up.
// A resumed run keeps who it is (name, parent, code): an option that would
// change it is refused rather than ignored. (--experiment is the config's
// run.experiment, compared as the rest of the config is.)
void check_resume_identity(const TrainArgs& a) {
  if (a.resume.empty()) return;
  const std::pair<const char*, const std::string*> given[] = {
      {"--name", &a.name}, {"--parent", &a.parent}, {"--code", &a.code}};
  for (const auto& [flag, value] : given)
    if (!value->empty())
      core::fail(core::ErrorKind::kUsage,
                 "{} {}: a resumed run keeps its {}; leave {} out of `train --resume`", flag,
                 core::escape_for_display(*value), std::string_view(flag).substr(2), flag);
}

void check_code_path(const TrainArgs& a) {
  if (std::error_code ec; !a.code.empty() && !std::filesystem::exists(a.code, ec))
    core::fail(core::ErrorKind::kUsage,
               "--code {}: no such file or folder; name a file or folder in the repository "
               "whose code the run records",
               a.code);
}

void config_show(const Context& ctx, const ConfigArgs& a) {
  const config::Config cfg = config::load_config(a.config, a.sets);
  if (ctx.json) {
    std::cout << format::Json(config::flatten(cfg)).dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else {
    std::cout << config::to_yaml(cfg);
  }
}

void config_keys() {
  Table t({"KEY", "DESCRIPTION"});
  for (const auto& [k, d] : config::config_keys()) t.add_row({k, d});
  t.print(std::cout);
}

void add_train(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("train", "Train a model from a YAML config and record the run");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("CONFIG", a->config, "YAML config (see configs/)")->required();
  cmd->add_option("--set", a->sets, "Override a config key, e.g. --set optimizer.lr=0.05")
      ->allow_extra_args(false);
  cmd->add_option("--name", a->name, "Run name")->check(run_name_rule());
  cmd->add_option("--experiment", a->experiment, "Experiment (overrides the config's)")
      ->check(experiment_rule());
  cmd->add_option("--resume", a->resume, "Continue a stopped or killed run (UUID prefix or name)");
  cmd->add_option("--parent", a->parent, "Record the run as a child of this run (a study)");
  cmd->add_option("--code", a->code,
                  "Record the git state of the repository holding this file or folder as the "
                  "run's code (default: the config file's)");
  cmd->add_flag("--no-progress", a->no_progress, "No progress bar");
  cmd->add_option("--nproc", a->nproc,
                  "Train data-parallel on N local processes (dist.nproc; each rank takes its "
                  "slice of every batch)")
      ->check(integer_in(1, 256));
  set_example(cmd, "trainscope train configs/demo.yaml --set optimizer.lr=0.002 --name try-2");
  cmd->callback([&ctx, a] {
    check_resume_identity(*a);
    check_code_path(*a);
    torch_commands().train(ctx, *a);
  });
}

void add_config(CLI::App& app, Context& ctx) {
  auto* config = app.add_subcommand("config", "Inspect training configs");
  config->require_subcommand(1);
  set_example(config, "trainscope config show configs/demo.yaml --set train.epochs=5");
  auto* show = config->add_subcommand("show", "Print the resolved config, every field included");
  auto a = std::make_shared<ConfigArgs>();
  show->add_option("CONFIG", a->config, "YAML config")->required();
  show->add_option("--set", a->sets, "Override a config key");
  set_example(show, "trainscope config show configs/demo.yaml --set optimizer.name=sgd");
  show->callback([&ctx, a] { config_show(ctx, *a); });
  auto* keys = config->add_subcommand("keys", "List every config key with its default");
  set_example(keys, "trainscope config keys");
  keys->callback([] { config_keys(); });
}

void add_eval(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("eval", "Evaluate a run's checkpoint on its test set");
  auto a = std::make_shared<EvalArgs>();
  cmd->add_option("RUN", a->run, "UUID prefix or run name")->required();
  cmd->add_option("--checkpoint", a->checkpoint, "Checkpoint name (default: the newest)");
  set_example(cmd, "trainscope eval demo --checkpoint step-000000469.pt");
  cmd->callback([&ctx, a] { torch_commands().eval(ctx, *a); });
}

void add_weights(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "weights", "Write a run's model weights as a PyTorch state dict (torch.load reads it)");
  auto a = std::make_shared<WeightsArgs>();
  cmd->add_option("RUN", a->run, "UUID prefix or run name")->required();
  cmd->add_option("--checkpoint", a->checkpoint, "Checkpoint name (default: the newest)");
  cmd->add_option("--out,-o", a->out, "The file to write (torch.save's format); - for stdout")
      ->required();
  set_example(cmd,
              "trainscope weights demo -o demo.pt   # then in Python: "
              "model.load_state_dict(torch.load('demo.pt'))");
  cmd->callback([&ctx, a] { torch_commands().weights(ctx, *a); });
}

}  // namespace

void register_train_commands(CLI::App& app, Context& ctx) {
  add_train(app, ctx);
  add_config(app, ctx);
  add_eval(app, ctx);
  add_weights(app, ctx);
}

}  // namespace trainscope::cli
