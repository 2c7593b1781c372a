// train, config show/keys, eval.
#include <csignal>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "../output.h"
#include "progress.h"
#include "torch_cli.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/format/format.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli::torch_cli {
using store::RunStatus;

namespace {

void on_sigint(int) {
  train::request_stop();
  // A second Ctrl-C ends the process at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

void print_result(const train::TrainResult& r, bool json) {
  if (json) {
    std::cout << nlohmann::json{{"run", r.run_uuid},
                                {"status", to_string(r.status)},
                                {"steps", r.steps},
                                {"epochs", r.epochs_completed},
                                {"test_accuracy", r.test.accuracy},
                                {"seconds", r.seconds}}
                     .dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else {
    std::cout << fmt::format("run {} {}: {} steps, test accuracy {:.4f}, {:.1f}s\n", r.run_uuid,
                             to_string(r.status), r.steps, r.test.accuracy, r.seconds);
  }
}

void print_eval(const store::RunInfo& run, const train::CheckpointEval& ev) {
  const auto& r = ev.result;
  std::cout << fmt::format("run {}  checkpoint {}  ({} test samples)\n", run.uuid.substr(0, 8),
                           ev.checkpoint, r.samples);
  std::cout << fmt::format("accuracy {:.4f}  macro-F1 {:.4f}  loss {:.4f}", r.accuracy, r.macro_f1,
                           r.loss);
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
}

nlohmann::json eval_json(const store::RunInfo& run, const train::CheckpointEval& ev) {
  const auto& r = ev.result;
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
  return j;
}

}  // namespace

void train(Context& ctx, const TrainArgs& a) {
  auto overrides = a.sets;
  if (!a.experiment.empty()) overrides.push_back("run.experiment=" + a.experiment);
  train::Config cfg = train::load_config(a.config, overrides);
  train::TrainOptions o;
  o.name = a.name.empty() ? std::filesystem::path(a.config).stem().string() : a.name;
  o.command_line = ctx.argv_line;
  o.resume = a.resume;
  if (!a.parent.empty()) o.parent = ctx.store()->resolve_run(a.parent).uuid;
  o.config_path = a.config;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  train::Trainer trainer(cfg, ctx.store(), o);
  trainer.add_observer(std::make_shared<ProgressObserver>(!a.no_progress));
  const train::TrainResult r = trainer.run();
  if (r.status == RunStatus::kStopped)
    core::log_info("stopped at step {}; resume with `trainscope train {} --resume {}`", r.steps,
                   a.config, r.run_uuid.substr(0, 8));
  print_result(r, ctx.json);
  if (r.status == RunStatus::kStopped)
    throw core::Error("stopped by signal", core::ErrorKind::kRuntime);
}

void config_show(Context& ctx, const ConfigArgs& a) {
  auto cfg = train::load_config(a.config, a.sets);
  if (ctx.json) {
    std::cout << nlohmann::json(train::flatten(cfg)).dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else {
    std::cout << train::to_yaml(cfg);
  }
}

void config_keys(Context& ctx) {
  Table t({"KEY", "DESCRIPTION"});
  for (const auto& [k, d] : train::config_keys()) t.add_row({k, d});
  t.print(std::cout);
}

void check_configs(const std::string& config,
                   const std::vector<std::pair<std::string, std::vector<std::string>>>& runs) {
  for (const auto& [name, sets] : runs) {
    try {
      train::load_config(config, sets);
    } catch (const core::Error& e) {
      throw core::Error("study run " + name + ": " + e.what(), e.kind());
    }
  }
}

void eval(Context& ctx, const EvalArgs& a) {
  auto store = ctx.reader();
  store::RunInfo run = store->resolve_run(a.run);
  auto ev = train::evaluate_run(*store, run, a.checkpoint);
  if (ctx.json) {
    std::cout << eval_json(run, ev).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else {
    print_eval(run, ev);
  }
}

}  // namespace trainscope::cli::torch_cli
