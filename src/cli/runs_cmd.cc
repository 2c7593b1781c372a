// `trainscope runs ...` and `trainscope metrics`: reading the store.
#include <fstream>
#include <iostream>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"

namespace trainscope::cli {
using core::ErrorKind;
using core::csv_field;
using core::escape_for_display;
using core::fail;
using core::format_double;
using core::format_utc;
using core::log_info;
using core::log_warn;
using core::unix_now;
using store::MetricPoint;
using store::RunFilter;
using store::RunInfo;
using store::RunStatus;
using store::Store;
using store::parse_run_status;

namespace {

double run_duration(const RunInfo& r) {
  double end = r.end_time > 0 ? r.end_time : (r.status == RunStatus::kRunning ? unix_now() : r.heartbeat);
  return end - r.start_time;
}

void print_runs(const std::vector<RunInfo>& runs, bool json) {
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : runs) arr.push_back(to_json(r, false));
    std::cout << arr.dump(2) << "\n";
    return;
  }
  Table t({"RUN", "NAME", "EXPERIMENT", "STATUS", "STARTED (UTC)", "DURATION"});
  t.align_right(5);
  for (const auto& r : runs) {
    std::string started = format_utc(r.start_time).substr(0, 19);
    started[10] = ' ';
    t.add_row({r.uuid.substr(0, 8), r.name, r.experiment, to_string(r.status), started,
               format_duration(run_duration(r))});
  }
  if (t.size() == 0) {
    log_info("no runs match");
    return;
  }
  t.print(std::cout);
}

void write_metric_csv_header(std::ostream& out, bool with_key) {
  out << (with_key ? "key,step,wall_time,value\n" : "step,wall_time,value\n");
}

void write_metric_csv(std::ostream& out, const std::string* key, const std::vector<MetricPoint>& pts) {
  std::string k = key ? csv_field(*key) + "," : std::string();
  for (const auto& p : pts)
    out << k << p.step << ',' << format_double(p.wall_time) << ',' << format_double(p.value) << '\n';
}

nlohmann::json metric_json(const std::vector<MetricPoint>& pts) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : pts)
    arr.push_back({{"step", p.step}, {"wall_time", p.wall_time}, {"value", json_number(p.value)}});
  return arr;
}

nlohmann::json run_json_full(Store& store, const RunInfo& r, bool with_points) {
  nlohmann::json j = to_json(r, true);
  j["params"] = store.params(r.uuid);
  j["tags"] = store.tags(r.uuid);
  nlohmann::json ms = nlohmann::json::array();
  auto summaries = store.metric_summaries(r.uuid);
  for (const auto& m : summaries) ms.push_back(to_json(m));
  j["metric_summaries"] = ms;
  if (with_points) {
    nlohmann::json pts = nlohmann::json::object();
    for (const auto& m : summaries) pts[m.key] = metric_json(store.metric(r.uuid, m.key));
    j["metrics"] = pts;
  }
  nlohmann::json arts = nlohmann::json::array();
  for (const auto& a : store.artifacts(r.uuid)) arts.push_back(to_json(a));
  j["artifacts"] = arts;
  return j;
}

void show_run(Store& store, const RunInfo& r, bool json) {
  if (json) {
    std::cout << run_json_full(store, r, false).dump(2) << "\n";
    return;
  }
  auto& o = std::cout;
  o << "run         " << r.uuid << "\n";
  o << "name        " << escape_for_display(r.name.empty() ? "-" : r.name) << "\n";
  o << "experiment  " << escape_for_display(r.experiment) << "\n";
  o << "status      " << to_string(r.status) << "\n";
  o << "started     " << format_utc(r.start_time) << "\n";
  o << "ended       " << (r.end_time > 0 ? format_utc(r.end_time) : "-") << "\n";
  o << "duration    " << format_duration(run_duration(r)) << "\n";
  o << "heartbeat   " << format_utc(r.heartbeat) << "\n";
  o << "host/pid    " << r.host << " / " << r.pid << "\n";
  if (!r.parent_uuid.empty()) o << "parent      " << r.parent_uuid << "\n";
  o << "command     " << escape_for_display(r.command_line.empty() ? "-" : r.command_line) << "\n";
  o << "config      " << (r.config_hash.empty() ? "-" : "sha256:" + r.config_hash.substr(0, 16))
    << "\n";

  auto print_kv = [&](const char* title, const std::map<std::string, std::string>& kv) {
    o << "\n" << title << " (" << kv.size() << ")\n";
    if (kv.empty()) return;
    Table t({"KEY", "VALUE"});
    for (const auto& [k, v] : kv) t.add_row({k, v});
    t.print(o);
  };
  print_kv("params", store.params(r.uuid));
  print_kv("tags", store.tags(r.uuid));

  auto ms = store.metric_summaries(r.uuid);
  o << "\nmetrics (" << ms.size() << ")\n";
  if (!ms.empty()) {
    Table t({"KEY", "POINTS", "LAST STEP", "LAST", "MIN", "MAX"});
    for (size_t c = 1; c < 6; ++c) t.align_right(c);
    for (const auto& m : ms)
      t.add_row({m.key, std::to_string(m.count), std::to_string(m.last_step),
                 format_value(m.last_value), format_value(m.min), format_value(m.max)});
    t.print(o);
  }
  auto arts = store.artifacts(r.uuid);
  o << "\nartifacts (" << arts.size() << ")\n";
  if (!arts.empty()) {
    Table t({"NAME", "KIND", "SIZE", "SHA256"});
    t.align_right(2);
    for (const auto& a : arts)
      t.add_row({a.name, a.kind, std::to_string(a.size), a.sha256.substr(0, 16)});
    t.print(o);
  }
}

}  // namespace

void register_runs_commands(CLI::App& app, Context& ctx) {
  auto* runs = app.add_subcommand("runs", "List, show, export and delete recorded runs");
  runs->require_subcommand(1);
  set_example(runs, "trainscope runs show 3f2a");

  // runs list
  {
    auto* cmd = runs->add_subcommand("list", "List runs, newest first");
    auto experiment = std::make_shared<std::string>();
    auto status = std::make_shared<std::string>();
    auto limit = std::make_shared<int64_t>(50);
    auto all = std::make_shared<bool>(false);
    cmd->add_option("--experiment,-e", *experiment, "Only runs of this experiment");
    cmd->add_option("--status,-s", *status,
                    "Only runs with this status (created, running, finished, failed, killed, "
                    "stopped)");
    cmd->add_option("--limit,-n", *limit, "Show at most N runs (0: all)");
    cmd->add_flag("--all,-a", *all, "Show every run (same as --limit 0)");
    set_example(cmd, "trainscope runs list --experiment demo --status finished --limit 20");
    cmd->callback([&ctx, experiment, status, limit, all] {
      RunFilter f;
      f.experiment = *experiment;
      if (!status->empty()) f.status = parse_run_status(*status);
      if (*limit < 0) fail(ErrorKind::kUsage, "--limit must be >= 0 (got {})", *limit);
      f.limit = *all ? 0 : *limit;
      print_runs(ctx.store()->list_runs(f), ctx.json);
    });
  }
  // runs show
  {
    auto* cmd = runs->add_subcommand("show", "Show one run: status, params, tags, metrics, artifacts");
    auto ref = std::make_shared<std::string>();
    cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
    set_example(cmd, "trainscope runs show 3f2a --json");
    cmd->callback([&ctx, ref] {
      auto store = ctx.store();
      show_run(*store, store->resolve_run(*ref), ctx.json);
    });
  }
  // runs export
  {
    auto* cmd = runs->add_subcommand("export", "Export a run's metrics (CSV) or everything (JSON)");
    auto ref = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("csv");
    auto out = std::make_shared<std::string>();
    cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
    cmd->add_option("--format,-f", *format, "csv (one row per metric point) or json (the whole run)")
        ->check(CLI::IsMember({"csv", "json"}));
    cmd->add_option("--out,-o", *out, "Write to this file instead of stdout");
    set_example(cmd, "trainscope runs export 3f2a --format json --out run.json");
    cmd->callback([&ctx, ref, format, out] {
      auto store = ctx.store();
      RunInfo r = store->resolve_run(*ref);
      if (*format == "json" || ctx.json) {
        auto j = run_json_full(*store, r, true);
        write_output(*out, [&](std::ostream& o) { o << j.dump(2) << "\n"; });
      } else {
        auto summaries = store->metric_summaries(r.uuid);
        write_output(*out, [&](std::ostream& o) {
          write_metric_csv_header(o, true);
          for (const auto& m : summaries) write_metric_csv(o, &m.key, store->metric(r.uuid, m.key));
        });
      }
      if (!out->empty() && *out != "-") log_info("wrote {}", *out);
    });
  }
  // runs delete
  {
    auto* cmd = runs->add_subcommand("delete", "Delete a run with its params, metrics and artifacts");
    auto ref = std::make_shared<std::string>();
    auto yes = std::make_shared<bool>(false);
    cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
    cmd->add_flag("--yes,-y", *yes, "Really delete (required)");
    set_example(cmd, "trainscope runs delete 3f2a --yes");
    cmd->callback([&ctx, ref, yes] {
      auto store = ctx.store();
      RunInfo r = store->resolve_run(*ref);
      if (!*yes)
        fail(ErrorKind::kUsage, "refusing to delete run {} ({}) without --yes", r.uuid.substr(0, 8),
             r.name.empty() ? "unnamed" : escape_for_display(r.name));
      if (r.status == RunStatus::kRunning)
        log_warn("run {} is still running; its writer will fail", r.uuid.substr(0, 8));
      store->delete_run(r.uuid);
      log_info("deleted run {}", r.uuid);
    });
  }

  // metrics RUN KEY
  {
    auto* cmd = app.add_subcommand("metrics", "Print one metric series of a run");
    auto ref = std::make_shared<std::string>();
    auto key = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("table");
    cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
    cmd->add_option("KEY", *key, "Metric key, e.g. loss (omit to list the run's keys)");
    cmd->add_option("--format,-f", *format, "table, csv or json")
        ->check(CLI::IsMember({"table", "csv", "json"}));
    set_example(cmd, "trainscope metrics 3f2a train/loss --format csv > loss.csv");
    cmd->callback([&ctx, ref, key, format] {
      auto store = ctx.store();
      RunInfo r = store->resolve_run(*ref);
      std::string fmt_name = ctx.json ? "json" : *format;
      if (key->empty()) {
        auto ms = store->metric_summaries(r.uuid);
        if (fmt_name == "json") {
          nlohmann::json arr = nlohmann::json::array();
          for (const auto& m : ms) arr.push_back(to_json(m));
          std::cout << arr.dump(2) << "\n";
          return;
        }
        Table t({"KEY", "POINTS", "LAST STEP", "LAST"});
        for (const auto& m : ms)
          t.add_row({m.key, std::to_string(m.count), std::to_string(m.last_step),
                     format_value(m.last_value)});
        t.print(std::cout);
        return;
      }
      auto pts = store->metric(r.uuid, *key);
      if (pts.empty()) {
        std::string keys;
        for (const auto& m : store->metric_summaries(r.uuid))
          keys += (keys.empty() ? "" : ", ") + escape_for_display(m.key);
        fail(ErrorKind::kNotFound, "run {} has no metric '{}'; its metrics: {}",
             r.uuid.substr(0, 8), escape_for_display(*key), keys.empty() ? "none" : keys);
      }
      if (fmt_name == "json") {
        std::cout << nlohmann::json{{"run", r.uuid}, {"key", *key}, {"points", metric_json(pts)}}
                         .dump(2)
                  << "\n";
      } else if (fmt_name == "csv") {
        write_metric_csv_header(std::cout, false);
        write_metric_csv(std::cout, nullptr, pts);
      } else {
        Table t({"STEP", "TIME (UTC)", "VALUE"});
        t.align_right(0);
        t.align_right(2);
        for (const auto& p : pts)
          t.add_row({std::to_string(p.step), format_utc(p.wall_time), format_value(p.value)});
        t.print(std::cout);
      }
    });
  }
}

}  // namespace trainscope::cli
