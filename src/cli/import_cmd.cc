// `trainscope import tfevents DIR`: runs from files other programs wrote.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/log.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/mlflow/mlflow.h"
#include "trainscope/tensorboard/tensorboard.h"

namespace trainscope::cli {

namespace {

// What the line about a cut output says was recorded (core/output.h).
void note_imported(const std::vector<tensorboard::ImportedRun>& runs) {
  std::vector<const tensorboard::ImportedRun*> fresh;
  for (const auto& r : runs)
    if (!r.already_imported) fresh.push_back(&r);
  if (fresh.size() == 1) return core::note_recorded_run(fresh[0]->name, fresh[0]->uuid);
  if (fresh.size() > 1)
    core::note_recorded(fmt::format("the {} runs imported were recorded in full", fresh.size()));
}

void print_imported(const std::vector<tensorboard::ImportedRun>& runs, bool json) {
  format::Json j = format::Json::array();
  size_t imported = 0;
  int64_t points = 0;
  for (const auto& r : runs) {
    j.push_back({{"folder", r.folder.string()},
                 {"name", r.name},
                 {"uuid", r.uuid},
                 {"files", r.files},
                 {"points", r.points},
                 {"skipped_values", r.skipped_values},
                 {"already_imported", r.already_imported}});
    if (r.already_imported) continue;
    ++imported;
    points += r.points;
  }
  if (json) {
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  for (const auto& r : runs) {
    const std::string what =
        r.already_imported
            ? "skipped: already imported"
            : fmt::format("{} points{}", r.points,
                          r.skipped_values
                              ? fmt::format(" ({} values that are no scalar number left out)",
                                            r.skipped_values)
                              : "");
    // The folder is the imported thing's, untrusted: escaped as a stored
    // name is (terminal escapes, line breaks, bytes that are not UTF-8).
    std::cout << fmt::format("{}  {}  {}  {}\n", core::short_uuid(r.uuid),
                             core::escape_for_display(r.name), what,
                             core::escape_for_display(r.folder.string()));
  }
  std::cout << fmt::format("imported {} run{} ({} scalar points); {} already imported\n", imported,
                           imported == 1 ? "" : "s", points, runs.size() - imported);
}

void print_mlflow(const std::vector<mlflow::ImportedRun>& runs, bool json) {
  format::Json j = format::Json::array();
  size_t imported = 0;
  int64_t points = 0, artifacts = 0;
  std::vector<const mlflow::ImportedRun*> fresh;
  for (const auto& r : runs) {
    j.push_back({{"mlflow_run_id", r.mlflow_run_id},
                 {"uuid", r.uuid},
                 {"name", r.name},
                 {"points", r.points},
                 {"artifacts", r.artifacts},
                 {"skipped", r.skipped.empty() ? format::Json() : format::Json(r.skipped)}});
    if (!r.skipped.empty()) {
      core::log_info("MLflow run {} ({}) skipped: {}", r.mlflow_run_id,
                     r.name.empty() ? "unnamed" : core::escape_for_display(r.name), r.skipped);
      continue;
    }
    ++imported, points += r.points, artifacts += r.artifacts;
    fresh.push_back(&r);
  }
  if (fresh.size() == 1) core::note_recorded_run(fresh[0]->name, fresh[0]->uuid);
  if (fresh.size() > 1)
    core::note_recorded(fmt::format("the {} runs imported were recorded in full", fresh.size()));
  if (json) {
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  std::cout << fmt::format("imported {} run{} ({} metric points, {} artifacts); {} skipped\n",
                           imported, imported == 1 ? "" : "s", points, artifacts,
                           runs.size() - imported);
}

void add_import_mlflow(CLI::App* im, Context& ctx) {
  auto* cmd = im->add_subcommand(
      "mlflow", "Import the runs of an MLflow tracking store: params, tags, metrics, artifacts");
  auto o = std::make_shared<mlflow::ImportOptions>();
  cmd->add_option("URI", o->uri,
                  "The tracking store: sqlite:///mlflow.db, a folder (mlruns), http://host:5000")
      ->required();
  cmd->add_option("--from", o->experiments,
                  "Only the runs of this MLflow experiment (repeat for more; default: all)");
  cmd->add_option("--experiment,-e", o->experiment,
                  "The runs' experiment here (default: their MLflow experiment's name)")
      ->check(experiment_rule());
  set_example(cmd,
              "trainscope import mlflow sqlite:///mlflow.db --from mnist\n"
              "  (MLflow's client runs in TRAINSCOPE_PYTHON or python3; again later: runs already "
              "imported are skipped)");
  cmd->callback([&ctx, o] {
    o->command_line = ctx.argv_line;
    const auto bridge = mlflow::find_bridge(std::filesystem::read_symlink("/proc/self/exe"));
    print_mlflow(mlflow::import_runs(*ctx.store(), *o, bridge), ctx.json);
  });
}

}  // namespace

void register_import_commands(CLI::App& app, Context& ctx) {
  auto* im = app.add_subcommand("import", "Bring runs other programs recorded into the store");
  im->require_subcommand(1);
  auto* cmd = im->add_subcommand(
      "tfevents", "Import the scalars of TensorBoard event files: one run per folder holding them");
  auto o = std::make_shared<tensorboard::ImportOptions>();
  cmd->add_option("DIR", o->dir, "The log folder (TensorBoard's --logdir); searched recursively")
      ->required();
  cmd->add_option("--experiment,-e", o->experiment, "The runs' experiment")
      ->check(experiment_rule());
  set_example(cmd,
              "trainscope import tfevents runs/ --experiment keras\n"
              "  (again later: folders already imported are skipped)");
  set_example(im, "trainscope import tfevents runs/");
  cmd->callback([&ctx, o] {
    o->command_line = ctx.argv_line;
    const auto runs = tensorboard::import_tfevents(*ctx.store(), *o);
    note_imported(runs);
    print_imported(runs, ctx.json);
  });
  add_import_mlflow(im, ctx);
}

}  // namespace trainscope::cli
