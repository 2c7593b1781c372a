#include "trainscope/profile/grid.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/yaml_checks.h"
#include "trainscope/profile/config.h"
#include "trainscope/train/trainer.h"

namespace fs = std::filesystem;

namespace trainscope::profile {
using core::ErrorKind;
using core::fail;

GridSpec load_grid(const fs::path& file) {
  GridSpec g;
  const std::optional<std::string> text = core::read_regular_file(file, "grid file");
  if (!text)
    fail(ErrorKind::kNotFound, "grid file {} cannot be read: check the path", file.string());
  core::check_yaml(*text, file.string());  // twice-given keys, deep nesting
  try {
    YAML::Node n = YAML::Load(*text);
    g.base = file.parent_path() / n["base"].as<std::string>("demo.yaml");
    g.models = n["models"].as<std::vector<std::string>>();
    g.batch_sizes = n["batch_sizes"].as<std::vector<int64_t>>();
    g.steps = n["steps"].as<int64_t>(16);
    g.repeats = n["repeats"].as<int64_t>(1);
    if (n["set"]) g.set = n["set"].as<std::vector<std::string>>();
  } catch (const YAML::Exception& e) {
    fail(ErrorKind::kUsage, "{}: {}", file.string(), e.what());
  }
  if (g.repeats < 1)
    fail(ErrorKind::kUsage, "{}: repeats must be at least 1 (got {})", file.string(), g.repeats);
  if (g.models.empty() || g.batch_sizes.empty())
    fail(ErrorKind::kUsage, "{}: give at least one of models and of batch_sizes", file.string());
  return g;
}

std::vector<GridCell> grid_cells(const GridSpec& g) {
  std::vector<GridCell> cells;
  for (int64_t rep = 1; rep <= g.repeats; ++rep)
    for (const auto& m : g.models)
      for (int64_t b : g.batch_sizes)
        cells.push_back({m, b, rep, g.repeats > 1,
                         g.repeats > 1 ? fmt::format("grid-{}-b{}-r{}", m, b, rep)
                                       : fmt::format("grid-{}-b{}", m, b)});
  return cells;
}

std::vector<std::string> cell_overrides(const GridSpec& g, const GridCell& c) {
  std::vector<std::string> o = {"data.test_subset=500"};
  o.insert(o.end(), g.set.begin(), g.set.end());
  o.insert(o.end(), {"model.name=" + c.model, "train.batch_size=" + std::to_string(c.batch),
                     "profile.enabled=true", "train.max_steps=" + std::to_string(g.steps),
                     "run.experiment=profile_grid", "checkpoint.every_epochs=0",
                     "fingerprint.every_steps=0"});
  return o;
}

void run_grid(std::shared_ptr<store::Store> store, const GridSpec& g,
              const std::string& command_line, const GridProgress& progress) {
  const auto cells = grid_cells(g);
  for (size_t i = 0; i < cells.size(); ++i) {
    const GridCell& c = cells[i];
    if (progress.before) progress.before(i + 1, cells.size(), c);
    config::Config cfg = config::load_config(g.base.string(), cell_overrides(g, c));
    train::TrainOptions to;
    to.name = c.name;
    to.command_line = command_line;
    to.check_steps = [&cfg](int64_t steps, int64_t batches) {
      check_profiled_steps(cfg, steps, batches);  // a cell that would profile nothing
    };
    train::Trainer t(cfg, store, to);
    const instrument::TrainResult r = t.run();
    if (progress.after) progress.after(i + 1, cells.size(), c, summarize(*store, r.run_uuid));
  }
}

}  // namespace trainscope::profile
