// `trainscope train`, `trainscope config ...`, `trainscope eval`.
#include <csignal>
#include <iostream>

#include "context.h"
#include "output.h"
#include "progress.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli {
using core::Error;
using core::ErrorKind;
using core::log_info;
using store::RunInfo;
using store::RunStatus;

namespace {

void on_sigint(int) {
  train::request_stop();
  // A second Ctrl-C ends the process at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace

void register_train_commands(CLI::App& app, Context& ctx) {
  // train
  {
    auto* cmd = app.add_subcommand("train", "Train a model from a YAML config and record the run");
    auto path = std::make_shared<std::string>();
    auto sets = std::make_shared<std::vector<std::string>>();
    auto name = std::make_shared<std::string>();
    auto experiment = std::make_shared<std::string>();
    auto resume = std::make_shared<std::string>();
    auto no_progress = std::make_shared<bool>(false);
    cmd->add_option("CONFIG", *path, "YAML config (see configs/)")->required();
    cmd->add_option("--set", *sets, "Override a config key, e.g. --set optimizer.lr=0.05")
        ->allow_extra_args(false);
    cmd->add_option("--name", *name, "Run name");
    cmd->add_option("--experiment", *experiment, "Experiment (overrides the config's)");
    cmd->add_option("--resume", *resume, "Continue a stopped or killed run (UUID prefix or name)");
    cmd->add_flag("--no-progress", *no_progress, "No progress bar");
    set_example(cmd, "trainscope train configs/demo.yaml --set optimizer.lr=0.002 --name try-2");
    cmd->callback([&ctx, path, sets, name, experiment, resume, no_progress] {
      auto overrides = *sets;
      if (!experiment->empty()) overrides.push_back("experiment=" + *experiment);
      train::Config cfg = train::load_config(*path, overrides);
      train::TrainOptions o;
      o.name = name->empty() ? std::filesystem::path(*path).stem().string() : *name;
      o.command_line = ctx.argv_line;
      o.resume = *resume;
      o.config_path = *path;
      std::signal(SIGINT, on_sigint);
      std::signal(SIGTERM, on_sigint);
      train::Trainer trainer(cfg, ctx.store(), o);
      trainer.add_observer(std::make_shared<ProgressObserver>(!*no_progress));
      auto r = trainer.run();
      if (r.status == RunStatus::kStopped)
        log_info("stopped at step {}; resume with `trainscope train {} --resume {}`", r.steps,
                 *path, r.run_uuid.substr(0, 8));
      if (ctx.json) {
        std::cout << nlohmann::json{{"run", r.run_uuid},
                                    {"status", to_string(r.status)},
                                    {"steps", r.steps},
                                    {"epochs", r.epochs_completed},
                                    {"test_accuracy", r.test.accuracy},
                                    {"seconds", r.seconds}}
                         .dump(2)
                  << "\n";
      } else {
        std::cout << fmt::format("run {} {}: {} steps, test accuracy {:.4f}, {:.1f}s\n",
                                 r.run_uuid, to_string(r.status), r.steps, r.test.accuracy,
                                 r.seconds);
      }
      if (r.status == RunStatus::kStopped) throw Error("stopped by signal", ErrorKind::kRuntime);
    });
  }
  // config show / keys
  {
    auto* config = app.add_subcommand("config", "Inspect training configs");
    config->require_subcommand(1);
    set_example(config, "trainscope config show configs/demo.yaml --set epochs=5");
    auto* show = config->add_subcommand("show", "Print the resolved config, every field included");
    auto path = std::make_shared<std::string>();
    auto sets = std::make_shared<std::vector<std::string>>();
    show->add_option("CONFIG", *path, "YAML config")->required();
    show->add_option("--set", *sets, "Override a config key");
    set_example(show, "trainscope config show configs/demo.yaml --set optimizer.name=sgd");
    show->callback([&ctx, path, sets] {
      auto cfg = train::load_config(*path, *sets);
      if (ctx.json) {
        std::cout << nlohmann::json(train::flatten(cfg)).dump(2) << "\n";
      } else {
        std::cout << train::to_yaml(cfg);
      }
    });
    auto* keys = config->add_subcommand("keys", "List every config key with its default");
    set_example(keys, "trainscope config keys");
    keys->callback([&ctx] {
      Table t({"KEY", "DESCRIPTION"});
      for (const auto& [k, d] : train::config_keys()) t.add_row({k, d});
      t.print(std::cout);
    });
  }
  // eval
  {
    auto* cmd = app.add_subcommand("eval", "Evaluate a run's checkpoint on its test set");
    auto ref = std::make_shared<std::string>();
    auto checkpoint = std::make_shared<std::string>();
    cmd->add_option("RUN", *ref, "UUID prefix or run name")->required();
    cmd->add_option("--checkpoint", *checkpoint, "Checkpoint name (default: the newest)");
    set_example(cmd, "trainscope eval demo --checkpoint step-000000469.pt");
    cmd->callback([&ctx, ref, checkpoint] {
      auto store = ctx.store();
      RunInfo run = store->resolve_run(*ref);
      auto ev = train::evaluate_run(*store, run, *checkpoint);
      const auto& r = ev.result;
      if (ctx.json) {
        nlohmann::json j = {{"run", run.uuid},
                            {"checkpoint", ev.checkpoint},
                            {"samples", r.samples},
                            {"loss", r.loss},
                            {"accuracy", r.accuracy},
                            {"macro_f1", r.macro_f1},
                            {"per_class_accuracy", r.per_class_accuracy},
                            {"confusion", r.confusion}};
        if (r.top5 >= 0) j["top5"] = r.top5;
        if (r.roc_auc >= 0) j["roc_auc"] = r.roc_auc;
        std::cout << j.dump(2) << "\n";
        return;
      }
      std::cout << fmt::format("run {}  checkpoint {}  ({} test samples)\n", run.uuid.substr(0, 8),
                               ev.checkpoint, r.samples);
      std::cout << fmt::format("accuracy {:.4f}  macro-F1 {:.4f}  loss {:.4f}", r.accuracy,
                               r.macro_f1, r.loss);
      if (r.top5 >= 0) std::cout << fmt::format("  top-5 {:.4f}", r.top5);
      if (r.roc_auc >= 0) std::cout << fmt::format("  ROC-AUC {:.4f}", r.roc_auc);
      std::cout << "\n\n";
      std::vector<std::string> header = {"TRUE \\ PRED"};
      for (size_t c = 0; c < r.confusion.size(); ++c) header.push_back(std::to_string(c));
      header.push_back("ACC");
      header.push_back("CLASS");
      Table t(header);
      for (size_t c = 1; c + 1 < header.size(); ++c) t.align_right(c);
      for (size_t c = 0; c < r.confusion.size(); ++c) {
        std::vector<std::string> row = {std::to_string(c)};
        for (auto v : r.confusion[c]) row.push_back(std::to_string(v));
        row.push_back(fmt::format("{:.3f}", r.per_class_accuracy[c]));
        row.push_back(c < ev.class_names.size() ? ev.class_names[c] : "");
        t.add_row(row);
      }
      t.print(std::cout);
    });
  }
}

}  // namespace trainscope::cli
