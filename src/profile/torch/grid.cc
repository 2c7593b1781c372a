#include "trainscope/profile/grid.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/core/yaml_checks.h"
#include "trainscope/profile/config.h"
#include "trainscope/train/trainer.h"

namespace fs = std::filesystem;

namespace trainscope::profile {
using core::ErrorKind;
using core::fail;

namespace {

// What a grid file's value is, for a message: its text, or its kind.
std::string shown(const YAML::Node& n) {
  return n.IsScalar()     ? "'" + core::escape_cut(n.Scalar(), 64) + "'"
         : n.IsSequence() ? "a list"
                          : "a mapping";
}

// The grid file's `key`: a whole number from `low` to `high`. yaml-cpp's
// as<T>(fallback) gave the default for `steps: [1, 2]` or `repeats:
// three` without a word (twenty-seventh hunt, A-D3).
int64_t whole_at(const YAML::Node& n, const std::string& key, int64_t low, int64_t high,
                 const fs::path& file) {
  const auto v = n.IsScalar() ? core::whole_in(n.Scalar(), low, high) : std::nullopt;
  if (!v)
    fail(ErrorKind::kUsage, "{}: {} must be a whole number from {} to {}, not {}", file.string(),
         key, low, high, shown(n));
  return *v;
}

// The grid file's `key`: one text, or (`list`) a list of them.
std::vector<std::string> texts_at(const YAML::Node& n, const std::string& key, bool list,
                                  const fs::path& file) {
  std::vector<std::string> out;
  if (!list && n.IsScalar()) return {n.Scalar()};
  if (list && n.IsSequence())
    for (const auto& item : n) {
      if (!item.IsScalar())
        fail(ErrorKind::kUsage, "{}: {} must be a list of single values; one item is {}",
             file.string(), key, shown(item));
      out.push_back(item.Scalar());
    }
  else
    fail(ErrorKind::kUsage, "{}: {} must be {}, not {}", file.string(), key,
         list ? "a list, e.g. [mlp, lenet5]" : "a text", shown(n));
  return out;
}

// The first of `values` listed before it too; nullptr when none is.
template <typename T>
const T* repeated(const std::vector<T>& values) {
  for (auto it = values.begin(); it != values.end(); ++it)
    if (std::find(values.begin(), it, *it) != it) return &*it;
  return nullptr;
}

}  // namespace

GridSpec load_grid(const fs::path& file) {
  GridSpec g;
  const std::optional<std::string> text = core::read_regular_file(file, "grid file");
  if (!text)
    fail(ErrorKind::kNotFound, "grid file {} cannot be read: check the path", file.string());
  core::check_yaml(*text, file.string());  // twice-given keys, deep nesting
  const YAML::Node n = YAML::Load(*text);  // check_yaml read it already
  if (!n.IsMap()) fail(ErrorKind::kUsage, "{}: a grid file is a mapping of keys", file.string());
  static const std::set<std::string> kKeys = {"base",  "models",  "batch_sizes",
                                              "steps", "repeats", "set"};
  for (const auto& kv : n)
    if (!kv.first.IsScalar() || !kKeys.count(kv.first.Scalar()))
      fail(ErrorKind::kUsage, "{}: unknown key {}; a grid file has {}", file.string(),
           shown(kv.first), "base, models, batch_sizes, steps, repeats, set");
  g.base = file.parent_path() /
           (n["base"] ? texts_at(n["base"], "base", false, file)[0] : std::string("demo.yaml"));
  if (n["models"]) g.models = texts_at(n["models"], "models", true, file);
  if (n["batch_sizes"])
    for (const auto& b : texts_at(n["batch_sizes"], "batch_sizes", true, file))
      g.batch_sizes.push_back(whole_at(YAML::Node(b), "a batch size", 1, 1 << 24, file));
  if (n["steps"]) g.steps = whole_at(n["steps"], "steps", 1, 1000000000, file);
  if (n["repeats"]) g.repeats = whole_at(n["repeats"], "repeats", 1, 1000, file);
  if (n["set"]) g.set = texts_at(n["set"], "set", true, file);
  if (g.models.empty() || g.batch_sizes.empty())
    fail(ErrorKind::kUsage, "{}: give at least one of models and of batch_sizes", file.string());
  // A value listed twice trained its cells twice under one name
  // (twenty-eighth hunt, A-D1).
  if (const std::string* m = repeated(g.models))
    fail(ErrorKind::kUsage, "{}: models lists '{}' twice: list each once", file.string(),
         core::escape_cut(*m, 64));
  if (const int64_t* b = repeated(g.batch_sizes))
    fail(ErrorKind::kUsage, "{}: batch_sizes lists {} twice: list each once", file.string(), *b);
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
  // Every cell's config read first: a model name mistyped last was found
  // after every earlier cell had trained.
  std::vector<config::Config> configs;
  for (const GridCell& c : cells)
    configs.push_back(config::load_config(g.base.string(), cell_overrides(g, c)));
  for (size_t i = 0; i < cells.size(); ++i) {
    const GridCell& c = cells[i];
    if (progress.before) progress.before(i + 1, cells.size(), c);
    config::Config& cfg = configs[i];
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
