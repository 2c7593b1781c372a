// Who a run is, and the one place an event source's run is created
// (instrument/run_identity.h).
#include "trainscope/instrument/run_identity.h"

#include <atomic>
#include <cstdlib>
#include <utility>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/instrument/code.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/run_env.h"

namespace trainscope::instrument {

namespace {

std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::map<std::string, ChildCheck>& parent_kinds() {
  static std::map<std::string, ChildCheck> kinds;
  return kinds;
}

// Whether this process has started the study's planned run already: the
// variables name one run, so a later start (a script's second start_run)
// records a run of its own, as `watch`'s program does (program_environment).
std::atomic<bool>& planned_started() {
  static std::atomic<bool> started{false};
  return started;
}

const std::string& name_of(const RunIdentity& id) {
  return id.name.empty() ? id.default_name : id.name;
}

}  // namespace

RunEnvironment read_run_environment() {
  RunEnvironment e;
  e.experiment = variable("TRAINSCOPE_EXPERIMENT");
  e.name = variable("TRAINSCOPE_RUN_NAME");
  // Empty means unset, as for every TRAINSCOPE_ variable.
  auto why = e.experiment.empty()
                 ? std::nullopt
                 : store::experiment_problem("TRAINSCOPE_EXPERIMENT", e.experiment);
  if (!why) why = store::run_name_problem("TRAINSCOPE_RUN_NAME", e.name);
  if (why) core::fail(core::ErrorKind::kUsage, "{}", *why);
  for (const std::string& item : core::split_list(variable("TRAINSCOPE_TAGS"))) {
    auto [k, v] =
        store::parse_key_value(item, "TRAINSCOPE_TAGS", "TRAINSCOPE_TAGS=team=vision,ablation=1");
    if (auto own = store::own_tag_problem(k))
      core::fail(core::ErrorKind::kUsage, "TRAINSCOPE_TAGS: {}", *own);
    e.tags[k] = v;
  }
  e.parent = variable("TRAINSCOPE_PARENT");
  e.planned = variable("TRAINSCOPE_PLANNED");
  if (planned_started()) e.name.clear(), e.parent.clear(), e.planned.clear();
  return e;
}

RunIdentity resolve_identity(RunIdentity given, const RunEnvironment& env, bool resuming) {
  RunIdentity id = std::move(given);
  const bool planned = !resuming && id.parent.empty() && !env.parent.empty() && !env.name.empty();
  if (planned) {  // the study's run: what it planned wins
    id.name = env.name;
    id.parent = env.parent;
    if (!env.experiment.empty()) id.experiment = env.experiment;
    id.store.clear();  // the study's, $TRAINSCOPE_STORE
    id.planned = env.planned;
  } else {
    if (id.name.empty()) id.name = env.name;
    if (id.experiment.empty()) id.experiment = env.experiment;
  }
  for (const auto& [k, v] : env.tags) id.tags.emplace(k, v);  // a given tag wins
  return id;
}

std::optional<store::RunInfo> admitted_parent(store::Store& store, const RunIdentity& id) {
  if (id.parent.empty()) return std::nullopt;
  store::RunInfo parent;
  try {
    parent = store.resolve_run(id.parent);
  } catch (const core::Error& e) {  // said of the parent, not of the run being started
    core::fail(e.kind(), "parent: {}", e.what());
  }
  const auto tags = store.tags(parent.uuid);
  if (const auto kind = tags.find("kind"); kind != tags.end()) {
    const auto& kinds = parent_kinds();
    if (const auto check = kinds.find(kind->second); check != kinds.end())
      check->second(store, parent, name_of(id),
                    core::sha256_hex(id.planned ? *id.planned : id.config_text));
  }
  return parent;
}

namespace {

// The run `id` names, its parent aside.
store::NewRun new_run_of(const RunIdentity& id) {
  store::NewRun nr;
  nr.experiment = !id.experiment.empty()           ? id.experiment
                  : !id.default_experiment.empty() ? id.default_experiment
                                                   : "default";
  nr.name = name_of(id);
  nr.unique_name = id.name.empty() && id.unique_default;
  nr.command_line = id.command_line;
  nr.config_text = id.config_text.empty() && id.planned ? *id.planned : id.config_text;
  return nr;
}

}  // namespace

store::RunInfo record_planned_failure(store::Store& store, const std::string& parent,
                                      const std::string& experiment, const std::string& name,
                                      const std::string& tag, const std::string& why) {
  const store::RunInfo r =
      store.create_run({.experiment = experiment, .name = name, .parent_uuid = parent});
  store.set_tag(r.uuid, tag, why);
  store.set_status(r.uuid, store::RunStatus::kFailed);
  return r;
}

std::unique_ptr<store::RunRecorder> start_unrecorded_run(const RunIdentity& id) {
  return store::RunRecorder::unrecorded(new_run_of(id));
}

std::unique_ptr<store::RunRecorder> start_run(std::shared_ptr<store::Store> store,
                                              const RunIdentity& id,
                                              std::optional<env::Manifest> environment) {
  const std::optional<store::RunInfo> parent = admitted_parent(*store, id);
  store::NewRun nr = new_run_of(id);
  if (parent) nr.parent_uuid = parent->uuid;
  auto run = store::RunRecorder::start(std::move(store), nr);
  for (const auto& [k, v] : id.tags) run->set_tag(k, v);
  if (id.planned && parent) {
    run->set_tag(kPlannedTag, core::sha256_hex(*id.planned));
    planned_started() = true;
  }
  if (environment) {
    if (!id.code_path.empty()) environment->merge(record_code(*run, id.code_path));
    if (!environment->empty()) run->set_environment(*environment);
  }
  return run;
}

bool register_parent_kind(const std::string& kind, ChildCheck check) {
  parent_kinds()[kind] = check;
  return true;
}

}  // namespace trainscope::instrument
