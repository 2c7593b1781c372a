// MLflow's runs into the store as runs (`import mlflow URI`).
#include "trainscope/store/import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "bridge.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/store.h"

namespace trainscope::mlflow {

using core::ErrorKind;
using core::fail;

namespace {

inline constexpr const char* kSourceTag = "import.source";  // "URI run ID"
// First: MLflow's run id, on a run this import began. Other importers
// write import.source too: a run marked by one of them is never taken for
// an MLflow import cut short (thirty-seventh hunt, A-D1).
inline constexpr const char* kStartedTag = "import.mlflow_started";
inline constexpr const char* kRunIdTag = "import.mlflow_run_id";  // last: the import is whole
inline constexpr std::string_view kOwn = "trainscope.run.";

// One MLflow run, read and checked, not yet written.
struct Incoming {
  std::string id, parent_id;  // MLflow's
  store::RunInfo info;
  std::string own_parent;  // trainscope.run.parent
  std::map<std::string, std::string> params, tags;
  std::vector<store::MetricSeries> series;
  struct Artifact {
    std::string name, path, kind = "mlflow";  // path: where the bridge downloaded it
  };
  std::vector<Artifact> artifacts;
  int64_t points = 0;
  std::string skipped;
  bool foreign = true;  // written by another program (no trainscope.run.* tags)
};

std::string text(const format::Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::map<std::string, std::string> strings(const format::Json& j, const char* key) {
  std::map<std::string, std::string> out;
  if (auto it = j.find(key); it != j.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

double exact_time(const std::map<std::string, std::string>& own, const char* key, double shown) {
  auto it = own.find(key);
  if (it == own.end()) return shown;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  return end && *end == '\0' && std::isfinite(v) ? v : shown;
}

// The facts trainscope exported as `trainscope.run.*` tags, back on the run.
void restore_own(Incoming& in, const std::map<std::string, std::string>& own) {
  auto get = [&](const char* k) {
    auto it = own.find(k);
    return it == own.end() ? std::string() : it->second;
  };
  if (store::is_stored_uuid(get("uuid"))) in.info.uuid = get("uuid");
  in.info.host = get("host");
  // A pid no process has is no pid: 0, unknown (thirty-fifth hunt, A-D3).
  // A pid is digits alone: "12abc" is no pid (thirty-eighth hunt, A-D11).
  const std::string pid_text = get("pid");
  char* pid_end = nullptr;
  const long long pid = std::strtoll(pid_text.c_str(), &pid_end, 10);
  const bool whole = !pid_text.empty() && pid_end && *pid_end == '\0';
  in.info.pid = whole && pid > 0 && pid <= std::numeric_limits<int32_t>::max() ? pid : 0;
  in.info.command_line = get("command_line");
  in.info.config_text = get("config");
  // The hash of the config it holds; the one given only without one (a
  // config longer than MLflow's tags hold), and only as a hash.
  in.info.config_hash = !in.info.config_text.empty() ? core::sha256_hex(in.info.config_text)
                        : core::is_sha256_hex(get("config_hash")) ? get("config_hash")
                                                                  : "";
  const auto kinds = format::Json::parse(get("artifact_kinds"), nullptr, false);
  if (kinds.is_object())
    for (auto& a : in.artifacts)
      if (auto k = kinds.find(a.name); k != kinds.end() && k->is_string())
        a.kind = k->get<std::string>();
  in.own_parent = get("parent");
  if (get("status") == "stopped" && in.info.status == store::RunStatus::kKilled)
    in.info.status = store::RunStatus::kStopped;
  in.info.start_time = exact_time(own, "start_time", in.info.start_time);
  in.info.end_time = exact_time(own, "end_time", in.info.end_time);
}

// Sorted by step (MLflow keeps points in no order beyond step and time).
store::MetricSeries series_of(const std::string& key, const format::Json& points,
                              const std::string& where) {
  store::MetricSeries s{key, {}};
  const std::string shown = store::shown_key(key);
  for (const auto& p : points) {
    const auto v = p.size() == 3 ? value_of(p[2]) : std::nullopt;
    if (!v || !p[0].is_number_integer() || !p[1].is_number())
      fail(ErrorKind::kStore,
           "{}: metric '{}' holds a point MLflow's client did not give as "
           "step, time, value; nothing was imported",
           where, shown);
    const int64_t step = p[0].get<int64_t>();
    if (auto why = store::step_problem(step))
      fail(ErrorKind::kUsage, "{}: metric '{}': {}; nothing was imported", where, shown, *why);
    // A time no reader shows makes every reader call the store damaged
    // (thirty-fifth hunt, B-D1).
    if (!store::is_point_time(p[1].get<double>()))
      fail(ErrorKind::kUsage,
           "{}: metric '{}' at step {} has the timestamp {} ms, which is no time of day (from "
           "1970 to the year 9999); nothing was imported",
           where, shown, step, p[1].get<double>() * 1000);
    s.points.push_back({step, p[1].get<double>(), *v});
  }
  // In the order they were logged (MLflow's timestamps), where a step only
  // goes forward, as every other entry point takes them (B-D3).
  std::stable_sort(s.points.begin(), s.points.end(), [](const auto& a, const auto& b) {
    return a.wall_time != b.wall_time ? a.wall_time < b.wall_time : a.step < b.step;
  });
  store::StepOrder order;
  for (const auto& pt : s.points) {
    if (auto back = order.problem(key, pt.step))
      fail(ErrorKind::kUsage, "{}: {} (in the order of its timestamps); nothing was imported",
           where, *back);
    order.take(key, pt.step);
  }
  return s;
}

// What store::check_kind_name would throw for an artifact's kind, as a
// problem; nullopt for a kind name.
std::optional<std::string> kind_problem(const std::string& kind) {
  try {
    store::check_kind_name("artifact", kind);
  } catch (const core::Error& e) {
    return std::string(e.what()).substr(0, std::string(e.what()).find(':'));
  }
  return std::nullopt;
}

// Every key and value by the rules every entry point keeps (store/accept.h).
void check(const Incoming& in, const std::string& where) {
  std::optional<std::string> why;
  auto note = [&](std::optional<std::string> w) {
    if (!why && w) why = std::move(w);
  };
  note(store::run_name_problem("run name", in.info.name));
  note(store::experiment_problem("experiment", in.info.experiment));
  for (const auto& [k, v] : in.params) {
    note(store::param_key_problem(k));
    note(store::param_value_problem(k, v));
  }
  for (const auto& [k, v] : in.tags) {
    if (!store::own_tag_problem(k)) note(store::tag_key_problem(k));
    note(store::tag_value_problem(k, v));
  }
  for (const auto& s : in.series) {
    note(store::metric_key_problem(s.key));
    for (const auto& p : s.points) note(store::own_metric_value_problem(s.key, p.value));
  }
  for (const auto& a : in.artifacts) {
    if (auto bad = store::artifact_name_problem(a.name))
      note(fmt::format("artifact '{}' {}", store::shown_key(a.name), *bad));
    note(kind_problem(a.kind));
  }
  if (!store::is_point_time(in.info.start_time) || !store::is_point_time(in.info.end_time))
    note(
        fmt::format("its start or end ({} / {} ms) is no time of day (from 1970 to the year "
                    "9999)",
                    in.info.start_time * 1000, in.info.end_time * 1000));
  if (why) fail(ErrorKind::kUsage, "{}: {}; nothing was imported", where, *why);
}

Incoming read_run(const format::Json& j, const ImportOptions& o) {
  Incoming in;
  in.id = text(j, "mlflow_run_id");
  in.info.uuid = core::new_uuid();
  in.info.experiment = o.experiment.empty() ? text(j, "experiment") : o.experiment;
  in.info.name = text(j, "name");
  in.info.command_line = o.command_line;
  in.info.start_time = j.value("start_time", 0.0);
  in.info.end_time = std::max(j.value("end_time", 0.0), in.info.start_time);
  const std::string status = text(j, "status");
  const std::string where =
      fmt::format("MLflow run {} ({})", core::short_uuid(in.id),
                  in.info.name.empty() ? "unnamed" : core::escape_for_display(in.info.name));
  if (status != "finished" && status != "failed" && status != "killed") {
    in.skipped = fmt::format("MLflow has it {}: import it once it has ended", status);
    return in;
  }
  in.info.status = store::parse_run_status(status);
  std::map<std::string, std::string> own;
  std::map<std::string, std::string> tags;
  for (auto& [k, v] : strings(j, "tags")) {
    if (std::string_view(k).starts_with(kOwn))
      own[k.substr(kOwn.size())] = v;
    else if (k == "mlflow.parentRunId")
      in.parent_id = v;
    else if (k != "mlflow.runName" && k != kSourceTag && k != kStartedTag && k != kRunIdTag)
      tags[k] = v;  // an earlier import's markers are not this import's (A-D4)
  }
  for (const auto& a : j.value("artifacts", format::Json::array()))
    in.artifacts.push_back({text(a, "name"), text(a, "path")});
  in.foreign = own.empty();
  if (!in.foreign) restore_own(in, own);
  for (auto& [k, v] : tags) {  // a tag only trainscope writes, from another program: kept aside
    const std::string key = !in.foreign || !store::own_tag_problem(k) ? k : "mlflow.tag." + k;
    if (!in.tags.emplace(key, v).second)  // thirty-sixth hunt, B-D8
      fail(ErrorKind::kUsage,
           "{}: its tags '{}' and '{}' would both be kept as '{}' (a tag only trainscope writes "
           "is kept aside so); nothing was imported",
           where, store::shown_key(k), store::shown_key(key), store::shown_key(key));
  }
  in.info.heartbeat = in.info.end_time;
  in.params = strings(j, "params");
  if (auto m = j.find("metrics"); m != j.end() && m->is_object())
    for (const auto& [key, points] : m->items()) {
      // A series only trainscope records (exit_code, probe/*, profile/*,
      // the sampler's), from another program: kept aside as mlflow/KEY,
      // never read as trainscope's (thirty-fifth hunt, B-D4).
      const bool aside = in.foreign && store::own_metric_problem(key).has_value();
      if (aside && m->contains("mlflow/" + key))
        fail(ErrorKind::kUsage,
             "{}: its metrics '{}' and 'mlflow/{}' would both be kept as 'mlflow/{}' (a series "
             "only trainscope records is kept aside so); nothing was imported",
             where, store::shown_key(key), store::shown_key(key), store::shown_key(key));
      in.series.push_back(series_of(aside ? "mlflow/" + key : key, points, where));
      in.points += static_cast<int64_t>(in.series.back().points.size());
    }
  check(in, where);
  return in;
}

// What the store holds of earlier imports.
struct Earlier {
  std::set<std::string> uuids;
  std::set<std::string> imported_now;                         // by this import
  std::map<std::string, store::RunInfo> by_id;                // MLflow run id -> whole import
  std::map<std::string, std::vector<std::string>> cut_short;  // MLflow run id -> uuids
};

std::string source_of(const ImportOptions& o, const std::string& id) {
  return o.uri + " run " + id;
}

Earlier earlier_imports(store::Store& store) {
  Earlier e;
  const auto runs = store.list_runs();
  std::vector<std::string> uuids;
  for (const auto& r : runs) uuids.push_back(r.uuid), e.uuids.insert(r.uuid);
  const auto fields = store.run_fields(uuids, false, true, false);
  for (const auto& r : runs) {
    auto f = fields.find(r.uuid);
    if (f == fields.end()) continue;
    const auto& tags = f->second.tags;
    if (auto id = tags.find(kRunIdTag); id != tags.end()) {
      e.by_id.emplace(id->second, r);
    } else if (auto started = tags.find(kStartedTag); started != tags.end()) {
      // By MLflow's run id, however the URI was spelled (B-D5).
      e.cut_short[started->second].push_back(r.uuid);
    }
  }
  return e;
}

// One run, whole or not at all: a failed write deletes what it wrote.
void write_run(store::Store& store, const Incoming& in, const ImportOptions& o,
               int64_t& artifacts) {
  store::import_whole(store, in.info, [&] {
    store.set_tag(in.info.uuid, kStartedTag, in.id);
    store.set_tag(in.info.uuid, kSourceTag, source_of(o, in.id));
    if (!in.params.empty()) store.set_params(in.info.uuid, in.params);
    for (const auto& [k, v] : in.tags) store.set_tag(in.info.uuid, k, v);
    store.append_metrics(in.info.uuid, in.series);
    for (const auto& a : in.artifacts) {
      store.add_artifact(in.info.uuid, a.path, a.kind, a.name);
      ++artifacts;
    }
    store.set_tag(in.info.uuid, kRunIdTag, in.id);  // last: the import is whole
  });
}

// Why `in` is not to be imported ("" when it is); replaces an import of it
// that was cut short.
std::string skip_reason(store::Store& store, const Incoming& in, Earlier& e) {
  if (!in.skipped.empty()) return in.skipped;
  if (auto r = e.by_id.find(in.id); r != e.by_id.end())
    return fmt::format("imported before as run {}", core::short_uuid(r->second.uuid));
  for (const auto& uuid : e.cut_short[in.id]) {
    core::log_warn("replacing run {}, left by an import of MLflow run {} that did not finish",
                   core::short_uuid(uuid), in.id);
    store.delete_run(uuid);
    e.uuids.erase(uuid);
  }
  if (e.imported_now.count(in.info.uuid))
    return fmt::format(
        "its trainscope.run.uuid names run {}, which another MLflow run of this "
        "import became",
        core::short_uuid(in.info.uuid));
  if (e.uuids.count(in.info.uuid))
    return fmt::format("it is run {} of this store, exported from here",
                       core::short_uuid(in.info.uuid));
  return {};
}

// The parent here: trainscope's own (exported from a store), else the run
// MLflow's parent became; none when it is in neither store nor import.
void place_under_parent(store::Store& store, Incoming& in,
                        const std::map<std::string, std::string>& uuid_of, const Earlier& e) {
  if (!in.own_parent.empty() && e.uuids.count(in.own_parent)) {
    in.info.parent_uuid = in.own_parent;
    return;
  }
  // Another program's run is never one of a trainscope study's runs: the
  // study's readers would count it as a planned run (thirty-fifth hunt,
  // B-D6).
  if (auto p = uuid_of.find(in.parent_id);
      p != uuid_of.end() && e.uuids.count(p->second) &&
      !(in.foreign && store.tags(p->second)["kind"] == "study")) {
    in.info.parent_uuid = p->second;
    return;
  }
  if (!in.parent_id.empty()) in.tags["mlflow.parentRunId"] = in.parent_id;
}

// Parents (by MLflow's run id) before their children.
std::vector<Incoming> parents_first(std::vector<Incoming> runs) {
  std::set<std::string> ids, placed;
  for (const auto& r : runs) ids.insert(r.id);
  std::vector<Incoming> out;
  while (!runs.empty()) {
    auto ready = std::stable_partition(runs.begin(), runs.end(), [&](const Incoming& r) {
      return r.parent_id.empty() || !ids.count(r.parent_id) || placed.count(r.parent_id);
    });
    if (ready == runs.begin()) ready = runs.end();  // a cycle: the rest as they come
    for (auto it = runs.begin(); it != ready; ++it) {
      placed.insert(it->id);
      out.push_back(std::move(*it));
    }
    runs.erase(runs.begin(), ready);
  }
  return out;
}

}  // namespace

std::vector<ImportedRun> import_runs(store::Store& store, const ImportOptions& options,
                                     const Bridge& bridge) {
  if (!options.experiment.empty())
    if (auto why = store::experiment_problem("--experiment", options.experiment))
      fail(ErrorKind::kUsage, "{}", *why);
  refuse_own_store(store, options.uri);
  TempDir artifacts;
  const format::Json res = run_bridge(bridge, "read",
                                      {{"uri", options.uri},
                                       {"experiments", options.experiments},
                                       {"artifacts_dir", artifacts.path.string()}});
  std::vector<Incoming> runs;  // every run read and checked before any is written
  for (const auto& j : res.value("runs", format::Json::array()))
    runs.push_back(read_run(j, options));
  runs = parents_first(std::move(runs));
  Earlier earlier = earlier_imports(store);
  std::map<std::string, std::string> uuid_of;  // MLflow run id -> uuid here
  for (const auto& [id, r] : earlier.by_id) uuid_of[id] = r.uuid;
  std::vector<ImportedRun> out;
  for (auto& in : runs) {
    ImportedRun r{in.id, in.info.uuid, in.info.name, in.points, 0, skip_reason(store, in, earlier)};
    if (r.skipped.empty()) {
      place_under_parent(store, in, uuid_of, earlier);
      write_run(store, in, options, r.artifacts);
      earlier.uuids.insert(in.info.uuid);
      earlier.imported_now.insert(in.info.uuid);
    } else if (auto e = earlier.by_id.find(in.id); e != earlier.by_id.end()) {
      r.uuid = e->second.uuid;
    }
    uuid_of[in.id] = r.uuid;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace trainscope::mlflow
