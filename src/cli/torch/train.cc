// train and eval.
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "../output.h"
#include "dist.h"
#include "progress.h"
#include "torch_cli.h"
#include "trainscope/checkpoint/state_dict.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/instrument/json.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/store/registry.h"
#include "trainscope/train/data_parallel.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli::torch_cli {
using store::RunStatus;

namespace {

// Ctrl-C, SIGTERM and SIGHUP (the terminal closed) stop the training at a
// step, with its checkpoint; a second one ends the process at once.
void on_sigint(int) {
  train::request_stop();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGHUP, SIG_DFL);
}

// What the run reached, and its test accuracy only when it was evaluated
// (a run stopped by a signal before an epoch ended was not: it printed
// "test accuracy 0.0000").
void print_result(const instrument::TrainResult& r, bool json) {
  if (json) {
    std::cout << instrument::train_result_json(r).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  if (r.status != RunStatus::kStopped) {
    std::cout << fmt::format("run {} {}: {} steps, test accuracy {:.4f}, {:.1f}s\n", r.run_uuid,
                             to_string(r.status), r.steps, r.test.accuracy, r.seconds);
  } else if (r.tested) {
    std::cout << fmt::format(
        "run {} stopped at step {}: test accuracy {:.4f} after epoch {}, {:.1f}s\n", r.run_uuid,
        r.steps, r.test.accuracy, r.epochs_completed, r.seconds);
  } else {
    std::cout << fmt::format(
        "run {} stopped at step {}, before an evaluation (no test accuracy), {:.1f}s\n", r.run_uuid,
        r.steps, r.seconds);
  }
}

void print_eval(const store::RunInfo& run, const train::CheckpointEval& ev) {
  const auto& r = ev.result;
  std::cout << fmt::format("run {}  checkpoint {}  ({} test samples)\n", core::short_uuid(run.uuid),
                           ev.checkpoint, r.samples);
  std::cout << fmt::format("accuracy {:.4f}  macro-F1 {:.4f}  loss {:.4f}", r.accuracy, r.macro_f1,
                           r.loss);
  if (r.top5 >= 0) std::cout << fmt::format("  top-5 {:.4f}", r.top5);
  if (r.roc_auc >= 0) std::cout << fmt::format("  ROC-AUC {:.4f}", r.roc_auc);
  std::cout << "\n\n";
  std::vector<std::string> header = {"TRUE / PRED"};
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

// The command that continues a stopped run: this one's store (without a
// password: PGPASSWORD or ~/.pgpass gives it), config, --set values and
// --experiment (a resume checks the config is the same), with --resume.
std::string resume_command(const Context& ctx, const TrainArgs& a, int64_t world,
                           const std::string& run_uuid) {
  std::vector<std::string> words = {"trainscope"};
  if (!ctx.store_uri.empty())
    words.insert(words.end(), {"--store", store::split_password(ctx.store_uri).uri});
  words.insert(words.end(), {"train", a.config});
  for (const auto& s : a.sets) words.insert(words.end(), {"--set", s});
  if (!a.experiment.empty()) words.insert(words.end(), {"--experiment", a.experiment});
  if (world > 0) words.insert(words.end(), {"--nproc", std::to_string(world)});
  words.insert(words.end(), {"--resume", core::short_uuid(run_uuid)});
  return core::shell_command(words);
}

}  // namespace

// Who the run is: the options given, then the environment's
// (instrument::resolve_identity: TRAINSCOPE_* and a study's planned child).
void train(Context& ctx, const TrainArgs& a) {
  train::TrainOptions o;
  o.name = a.name;
  o.default_name = std::filesystem::path(a.config).stem().string();
  o.experiment = a.experiment;
  o.parent = a.parent;
  o.command_line = ctx.argv_line;
  o.code_path = a.code.empty() ? a.config : a.code;
  static_cast<instrument::RunIdentity&>(o) =
      instrument::resolve_identity(o, instrument::read_run_environment(), !a.resume.empty());
  o.resume = a.resume;
  auto overrides = a.sets;
  if (a.nproc > 0) overrides.push_back("dist.nproc=" + std::to_string(a.nproc));
  config::Config cfg = config::load_config(a.config, overrides);
  if (launch_ranks(ctx, a, cfg)) return;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  std::signal(SIGHUP, on_sigint);
  // A data-parallel rank (dist/README.md): rank 0 records into this
  // store; the others record nothing and show no progress.
  const auto rank = train::join_data_parallel(cfg, o, [&] { return ctx.store(); });
  const bool recorded = !rank || rank->records;
  train::Trainer trainer(cfg, rank ? rank->store : ctx.store(), o);
  trainer.add_observer(std::make_shared<ProgressObserver>(!a.no_progress && recorded));
  const instrument::TrainResult r = trainer.run();
  if (!recorded) return;
  note_recorded_run(*ctx.store(), r.run_uuid);
  if (r.status == RunStatus::kStopped)
    core::log_info("stopped at step {}; resume with `{}`", r.steps,
                   resume_command(ctx, a, rank ? rank->world->size() : 0, r.run_uuid));
  print_result(r, ctx.json);
  // A local launcher says it for its ranks.
  if (r.status == RunStatus::kStopped && (!rank || rank->world->source() != "launcher"))
    throw core::Error("stopped by signal", core::ErrorKind::kRuntime);
}

void weights(Context& ctx, const WeightsArgs& a) {
  auto store = ctx.reader();
  const store::RunInfo run = store->resolve_run(a.run);
  core::check_output_file(a.out);
  const std::string from = checkpoint::export_state_dict(*store, run, a.checkpoint, a.out);
  if (!written_whole(a.out)) return;  // main says what became of stdout, in one line
  core::log_info("wrote {}: the weights of run {} at {}, as torch.save writes a state dict",
                 a.out == "-" ? "stdout" : a.out, core::short_uuid(run.uuid), from);
}

void eval(Context& ctx, const EvalArgs& a) {
  auto store = ctx.reader();
  store::RunInfo run = store->resolve_run(a.run);
  auto ev = train::evaluate_run(*store, run, a.checkpoint);
  if (ctx.json) {
    std::cout << instrument::evaluation_json(run.uuid, ev.checkpoint, ev.result)
                     .dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else {
    print_eval(run, ev);
  }
}

}  // namespace trainscope::cli::torch_cli
