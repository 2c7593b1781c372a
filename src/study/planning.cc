// Planning a study: its size before anything is built, its resolved base,
// and whether its files still say what it recorded.
#include "planning.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <limits>

#include "job_process.h"
#include "trainscope/config/config.h"
#include "trainscope/core/error.h"
#include "trainscope/core/flat_yaml.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"

namespace trainscope::study {

using core::ErrorKind;
using core::fail;
using store::RunInfo;
namespace fs = std::filesystem;

namespace {

using Flat = std::map<std::string, std::string>;

// The trainer's config (config/config.h) is torch-free, so a study plans
// without loading libtorch. The config file at `path` with every key
// resolved, as YAML: what a study records as its base. Throws Error naming
// the file and the key.
std::string resolve_file(const fs::path& path) {
  return config::to_yaml(config::load_config(path.string(), {}));
}

// The config a training records (YAML, every key) when it trains `base`
// (YAML text) with `sets` ("key=value", later wins). Throws Error naming
// the key for a value the trainer refuses.
std::string resolve_text(const std::string& base, const std::vector<std::string>& sets) {
  return config::to_yaml(config::parse_config(base, sets, "the study's recorded base config"));
}

std::string count_text(uint64_t n) {
  if (n == std::numeric_limits<uint64_t>::max()) return "more than 18 quintillion";
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string human_time(double s) {
  if (s < 48 * 3600) return core::format_duration(s);
  if (s < 365 * 86400) return fmt::format("{:.0f} days", s / 86400);
  return fmt::format("{:.3g} years", s / (365.25 * 86400));
}

// "7 grid keys, 1,280,000,000 cells x 2 runs" or "8 sources x 5 runs".
std::string shape_text(const StudySpec& s) {
  if (!s.sources.empty())
    return fmt::format("{} source{} x up to {} runs", s.sources.size(),
                       s.sources.size() == 1 ? "" : "s", s.replicates);
  uint64_t cells = 1;
  for (const auto& f : s.grid)
    cells = f.values.size() > std::numeric_limits<uint64_t>::max() / cells
                ? std::numeric_limits<uint64_t>::max()
                : cells * f.values.size();
  return fmt::format("{} grid key{}, {} cells", s.grid.size(), s.grid.size() == 1 ? "" : "s",
                     count_text(cells));
}

// A resolved config (the trainer's to_yaml, or a run's recorded config
// text) as dotted keys: a list as "[a, b]" with every item shown, a null
// as "", a later key over an earlier one. `source` names it in an error.
Flat flat_config(const std::string& yaml, const std::string& source) {
  Flat out;
  for (auto& v : core::flatten_yaml(
           yaml, source,
           {.list_items = core::ListItems::kAsYaml, .not_a_map = core::NotAMap::kOneValue}))
    out[v.key] = std::move(v.text);
  return out;
}

std::string list_text(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + "]";
}

// The fields of a study file that decide its runs, as dotted keys.
Flat describe(const StudySpec& s) {
  Flat m;
  m["study"] = s.name;
  if (!s.command.empty()) m["command"] = s.command;
  for (const auto& [k, v] : s.set) m["set." + k] = v;  // a later one wins, as in a run
  for (const auto& f : s.grid) m["grid." + f.key] = list_text(f.values);
  if (!s.sources.empty()) m["sources"] = list_text(s.sources);
  m["replicates"] = std::to_string(s.replicates);
  m["vary"] = s.vary;
  m["deterministic"] = s.deterministic ? "true" : "false";
  m["retries"] = std::to_string(s.retries);
  m["threads_per_run"] = std::to_string(s.threads_per_run);
  return m;
}

// A key a side does not hold reads "(not set)".
[[noreturn]] void refuse(const std::string& study, const core::KeyDifference& d,
                         const fs::path& file) {
  fail(ErrorKind::kConflict,
       "{} was {} when study {} was planned and is {} in {} now: `study resume` trains the "
       "recorded plan only; restore the file, or pass --replan to plan the study again from its "
       "files (finished runs the new plan does not train are set aside)",
       core::escape_for_display(d.key), core::escape_for_display(d.was.value_or("(not set)")),
       core::escape_for_display(study), core::escape_for_display(d.now.value_or("(not set)")),
       file.string());
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && fs::is_regular_file(p, ec);
}

// A study recorded without its resolved base: its first finished training
// says what the base resolved to then.
void check_against_a_finished_run(store::Store& store, const RunInfo& study,
                                  const StudySpec& spec) {
  store::RunFilter f{.status = store::RunStatus::kFinished, .parent_uuid = study.uuid, .limit = 1};
  auto runs = store.list_runs(f);
  if (runs.empty()) return;
  const Plan plan(spec);
  const auto index = plan.find(runs[0].name);
  if (!index) return;
  const RunInfo run = *store.find_run(runs[0].uuid);
  const std::string now =
      resolve_text(resolve_file(spec.base), training_sets(spec, plan.at(*index)));
  if (core::sha256_hex(now) == run.config_hash) return;
  if (auto d = core::first_difference(
          flat_config(run.config_text, "the recorded config of run " + core::short_uuid(run.uuid)),
          flat_config(now, "the base config as resolved now")))
    refuse(study.name, *d, spec.base);
}

}  // namespace

std::vector<std::string> training_sets(const StudySpec& spec, const PlannedRun& run) {
  std::vector<std::string> out = {"run.experiment=" + spec.name};
  for (auto& line : set_lines(run)) out.push_back(std::move(line));
  return out;
}

std::string command_run_text(const StudySpec& spec, const PlannedRun& run) {
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "study" << YAML::Value << spec.name;
  y << YAML::Key << "run" << YAML::Value << run.name;
  y << YAML::Key << "command" << YAML::Value << spec.command;
  y << YAML::Key << "set" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : run.set) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

PlanEstimate estimate_plan(store::Store& store, const StudySpec& spec, const StudyOptions& o) {
  PlanEstimate e;
  e.runs = Plan(spec).size();
  e.workers = o.workers > 0 ? o.workers : default_workers(spec);
  if (o.executor == "slurm" && o.array_parallelism > 0) e.workers = o.array_parallelism;
  store::RunFilter f{.experiment = spec.name, .status = store::RunStatus::kFinished, .limit = 200};
  double sum = 0;
  for (const auto& r : store.list_runs(f)) {
    const double seconds = store::run_seconds(r, 0);        // NaN: times that give no duration
    if (r.parent_uuid.empty() || !(seconds > 0)) continue;  // a study, not a training
    sum += seconds;
    ++e.from_runs;
  }
  if (e.from_runs > 0) e.run_s = sum / e.from_runs;
  return e;
}

std::string estimate_text(const PlanEstimate& e) {
  if (e.run_s < 0)
    return fmt::format("{} runs on {} worker(s), time unknown (no earlier run of this experiment)",
                       count_text(e.runs), e.workers);
  return fmt::format(
      "{} runs on {} worker(s), about {} at {:.1f}s a run (the mean of {} earlier "
      "run(s))",
      count_text(e.runs), e.workers, human_time(e.total_s()), e.run_s, e.from_runs);
}

namespace {

// Every planned run's name is one a run may have (store/accept.h), and
// short enough for the log file named after it (a file name's 255 bytes):
// refused when planned, not as each training fails.
void check_planned_names(const StudySpec& spec) {
  constexpr size_t kMaxPlannedName = 240;
  const Plan plan(spec);
  for (uint64_t i = 0; i < plan.size(); ++i) {
    const std::string name = plan.at(i).name;
    auto why = store::run_name_problem("a planned run name", name);
    if (!why && name.size() > kMaxPlannedName)
      why = fmt::format(
          "a planned run name '{}...' is {} bytes, more than the {} its log file "
          "can be named after",
          core::escape_cut(name, 60), name.size(), kMaxPlannedName);
    if (why)
      fail(ErrorKind::kUsage, "study {} cannot plan its runs: {}; shorten the grid's values",
           spec.name, *why);
  }
}

}  // namespace

StudySpec plan_study(store::Store& store, StudySpec spec, const StudyOptions& o) {
  if (!o.log_dir.empty()) make_log_folder(o.log_dir);  // before anything is planned
  const PlanEstimate e = estimate_plan(store, spec, o);
  if (e.runs > o.max_runs)
    fail(ErrorKind::kUsage,
         "study {} plans {} runs ({}), above the limit of {} (--max-runs): {}; shrink the grid or "
         "the replicates, or pass --max-runs {} to run them all",
         spec.name, count_text(e.runs), shape_text(spec), count_text(o.max_runs), estimate_text(e),
         e.runs);
  check_planned_names(spec);
  // A command's settings are the script's own business (trainscope.config()
  // refuses a key the script does not have, when its run starts).
  if (!spec.command.empty()) return spec;
  spec.resolved_base = resolve_file(spec.base);
  const Plan plan(spec);
  for (uint64_t i = 0; i < plan.size(); ++i) {
    const PlannedRun p = plan.at(i);
    try {
      resolve_text(spec.resolved_base, training_sets(spec, p));
    } catch (const core::Error& err) {
      throw core::Error("study run " + p.name + ": " + err.what(), err.kind());
    }
  }
  return spec;
}

void check_unchanged(store::Store& store, const RunInfo& study, const StudySpec& recorded) {
  // A command is run by a shell: one the store alone says (the study file
  // gone) could have been written there by anyone who writes the store
  // (thirty-third hunt, A-D1), so it runs only as its file still says it.
  if (!recorded.command.empty() && !is_file(recorded.file))
    fail(ErrorKind::kUsage,
         "study {} runs the command `{}` as the store records it, and its file {} is gone: a "
         "resume runs a command only while its study file still says it; restore the file",
         study.name, core::escape_for_display(recorded.command), recorded.file.string());
  StudySpec now = recorded;
  if (is_file(recorded.file)) {
    const bool quick = store.params(study.uuid)["study.quick"] == "true";
    try {
      now = load_study(recorded.file, quick);
    } catch (const core::Error& e) {
      fail(ErrorKind::kConflict,
           "the file of study {} changed since it was planned and no longer reads ({}): restore "
           "it, or move it away to resume the recorded plan",
           study.name, e.what());
    }
    if (auto d = core::first_difference(describe(recorded), describe(now)))
      refuse(study.name, *d, recorded.file);
  }
  if (!is_file(now.base)) return;
  if (recorded.resolved_base.empty()) return check_against_a_finished_run(store, study, now);
  std::string resolved;
  try {
    resolved = resolve_file(now.base);
  } catch (const core::Error& e) {
    fail(ErrorKind::kConflict,
         "the base config of study {} changed since it was planned and no longer reads ({}): "
         "restore it, or move it away to resume the recorded plan",
         study.name, e.what());
  }
  if (auto d = core::first_difference(
          flat_config(recorded.resolved_base, "the recorded base config of study " + study.name),
          flat_config(resolved, "the base config as resolved now")))
    refuse(study.name, *d, now.base);
}

std::map<std::string, std::string> plan_tags(const StudySpec& spec) {
  return {{"study.mode", spec.sources.empty() ? "grid" : "sources"},
          {"study.replicates", std::to_string(spec.replicates)},
          {"study.vary", spec.vary},
          {"study.retries", std::to_string(spec.retries)},
          {"study.threads_per_run", std::to_string(spec.threads_per_run)},
          {"study.planned_runs", std::to_string(Plan(spec).size())}};
}

std::string planned_hash(const StudySpec& spec, const PlannedRun& p) {
  if (!spec.command.empty()) return core::sha256_hex(command_run_text(spec, p));
  return core::sha256_hex(resolve_text(spec.resolved_base, training_sets(spec, p)));
}

namespace {

// Sets aside every attempt of the study that the plan `spec` does not
// train: a name it no longer plans, or a config other than the one it
// plans under that name. Returns how many.
int set_aside(store::Store& store, const RunInfo& study, const StudySpec& spec) {
  const Plan plan(spec);
  std::map<std::string, uint64_t> index;
  for (uint64_t i = 0; i < plan.size(); ++i) index.emplace(plan.at(i).name, i);
  const auto runs = store.list_runs({.parent_uuid = study.uuid});
  std::vector<std::string> uuids;
  for (const auto& r : runs) uuids.push_back(r.uuid);
  auto fields = store.run_fields(uuids, false, true, false);
  int n = 0;
  for (const auto& r : runs) {
    if (fields[r.uuid].tags.count(kSupersededTag)) continue;
    auto it = index.find(r.name);
    const auto& tags = fields[r.uuid].tags;
    const auto recorded = tags.find(kPlannedTag);  // `trainscope train` run by a command
    const std::string hash = recorded != tags.end() ? recorded->second : r.config_hash;
    const bool planned = it != index.end() && planned_hash(spec, plan.at(it->second)) == hash;
    if (planned) continue;
    store.set_tag(r.uuid, kSupersededTag, "replan");
    ++n;
  }
  return n;
}

}  // namespace

StudySpec replan_study(store::Store& store, const RunInfo& study, const StudyOptions& o) {
  auto params = store.params(study.uuid);
  const fs::path file = params["study.file"];
  if (!is_file(file))
    fail(ErrorKind::kNotFound,
         "study {} cannot be planned again: its file {} is gone; --replan plans from the "
         "study's files as they are now",
         study.name, file.string());
  StudySpec spec = plan_study(store, load_study(file, params["study.quick"] == "true"), o);
  if (spec.name != study.name)
    fail(ErrorKind::kConflict,
         "{} now names study '{}', not '{}': plan it as a new study with `study run {}`",
         file.string(), spec.name, study.name, file.string());
  store.set_config(study.uuid, recorded_text(spec));
  for (const auto& [k, v] : plan_tags(spec)) store.set_tag(study.uuid, k, v);
  const int aside = set_aside(store, study, spec);
  core::log_info("study {} planned again from {}: {} run(s) it no longer trains set aside",
                 study.name, file.string(), aside);
  return spec;
}

}  // namespace trainscope::study
