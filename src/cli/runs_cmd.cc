// `trainscope runs ...` and `trainscope metrics`: reading the store.
#include <iostream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"

namespace trainscope::cli {
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using store::RunInfo;
using store::Store;

namespace {

void print_runs(const std::vector<RunInfo>& runs, bool json) {
  if (json) {
    format::Json arr = format::Json::array();
    for (const auto& r : runs) arr.push_back(format::run(r, false));
    std::cout << arr.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  Table t({"RUN", "NAME", "EXPERIMENT", "STATUS", "STARTED (UTC)", "DURATION"});
  t.align_right(5);
  const double now = core::unix_now();
  for (const auto& r : runs) {
    std::string started = core::format_utc(r.start_time).substr(0, 19);
    started[10] = ' ';
    t.add_row({r.uuid.substr(0, 8), r.name, r.experiment, to_string(r.status), started,
               format::duration(format::run_seconds(r, now))});
  }
  if (t.size() == 0) {
    core::log_info("no runs match");
    return;
  }
  t.print(std::cout);
}

void print_key_values(std::ostream& o, const char* title,
                      const std::map<std::string, std::string>& kv) {
  o << "\n" << title << " (" << kv.size() << ")\n";
  if (kv.empty()) return;
  Table t({"KEY", "VALUE"});
  for (const auto& [k, v] : kv) t.add_row({k, v});
  t.print(o);
}

void print_header(std::ostream& o, const RunInfo& r) {
  o << "run         " << r.uuid << "\n";
  o << "name        " << escape_for_display(r.name.empty() ? "-" : r.name) << "\n";
  o << "experiment  " << escape_for_display(r.experiment) << "\n";
  o << "status      " << to_string(r.status) << "\n";
  o << "started     " << core::format_utc(r.start_time) << "\n";
  o << "ended       " << (r.end_time > 0 ? core::format_utc(r.end_time) : "-") << "\n";
  o << "duration    " << format::duration(format::run_seconds(r, core::unix_now())) << "\n";
  o << "heartbeat   " << core::format_utc(r.heartbeat) << "\n";
  o << "host/pid    " << r.host << " / " << r.pid << "\n";
  if (!r.parent_uuid.empty()) o << "parent      " << r.parent_uuid << "\n";
  o << "command     " << escape_for_display(r.command_line.empty() ? "-" : r.command_line) << "\n";
  o << "config      " << (r.config_hash.empty() ? "-" : "sha256:" + r.config_hash.substr(0, 16))
    << "\n";
}

void print_metrics_and_artifacts(std::ostream& o, Store& store, const RunInfo& r) {
  auto ms = store.metric_summaries(r.uuid);
  o << "\nmetrics (" << ms.size() << ")\n";
  if (!ms.empty()) {
    Table t({"KEY", "POINTS", "LAST STEP", "LAST", "MIN", "MAX"});
    for (size_t c = 1; c < 6; ++c) t.align_right(c);
    for (const auto& m : ms)
      t.add_row({m.key, std::to_string(m.count), std::to_string(m.last_step),
                 format::value(m.last_value), format::value(m.min), format::value(m.max)});
    t.print(o);
  }
  auto arts = store.artifacts(r.uuid);
  o << "\nartifacts (" << arts.size() << ")\n";
  if (arts.empty()) return;
  Table t({"NAME", "KIND", "SIZE", "SHA256"});
  t.align_right(2);
  for (const auto& a : arts)
    t.add_row({a.name, a.kind, std::to_string(a.size), a.sha256.substr(0, 16)});
  t.print(o);
}

void show_run(Store& store, const RunInfo& r, bool json) {
  if (json) {
    std::cout << format::run_export(store, r, false).dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
    return;
  }
  print_header(std::cout, r);
  print_key_values(std::cout, "params", store.params(r.uuid));
  print_key_values(std::cout, "tags", store.tags(r.uuid));
  print_metrics_and_artifacts(std::cout, store, r);
}

void add_list(CLI::App* runs, Context& ctx) {
  auto* cmd = runs->add_subcommand("list", "List runs, newest first");
  auto f = std::make_shared<store::RunFilter>();
  auto status = std::make_shared<std::string>();
  auto limit = std::make_shared<int64_t>(50);
  auto all = std::make_shared<bool>(false);
  cmd->add_option("--experiment,-e", f->experiment, "Only runs of this experiment");
  cmd->add_option("--status,-s", *status,
                  "Only runs with this status (created, running, finished, failed, killed, "
                  "stopped)");
  cmd->add_option("--limit,-n", *limit, "Show at most N runs (0: all)");
  cmd->add_flag("--all,-a", *all, "Show every run (same as --limit 0)");
  set_example(cmd, "trainscope runs list --experiment demo --status finished --limit 20");
  cmd->callback([&ctx, f, status, limit, all] {
    if (!status->empty()) f->status = store::parse_run_status(*status);
    if (*limit < 0) fail(ErrorKind::kUsage, "--limit must be >= 0 (got {})", *limit);
    f->limit = *all ? 0 : *limit;
    print_runs(ctx.reader()->list_runs(*f), ctx.json);
  });
}

void add_show(CLI::App* runs, Context& ctx) {
  auto* cmd =
      runs->add_subcommand("show", "Show one run: status, params, tags, metrics, artifacts");
  auto ref = std::make_shared<std::string>();
  cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
  set_example(cmd, "trainscope runs show 3f2a --json");
  cmd->callback([&ctx, ref] {
    auto store = ctx.reader();
    show_run(*store, store->resolve_run(*ref), ctx.json);
  });
}

void add_export(CLI::App* runs, Context& ctx) {
  auto* cmd = runs->add_subcommand("export", "Export a run's metrics (CSV) or everything (JSON)");
  auto ref = std::make_shared<std::string>();
  auto fmt_name = std::make_shared<std::string>("csv");
  auto out = std::make_shared<std::string>();
  cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
  cmd->add_option("--format,-f", *fmt_name,
                  "csv (one row per metric point) or json (the whole run)")
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--out,-o", *out, "Write to this file instead of stdout");
  set_example(cmd, "trainscope runs export 3f2a --format json --out run.json");
  cmd->callback([&ctx, ref, fmt_name, out] {
    auto store = ctx.reader();
    RunInfo r = store->resolve_run(*ref);
    if (*fmt_name == "json" || ctx.json) {
      auto j = format::run_export(*store, r, true);
      write_output(
          *out, [&](std::ostream& o) { o << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n"; });
    } else {
      write_output(*out, [&](std::ostream& o) { format::run_metrics_csv(o, *store, r); });
    }
    if (!out->empty() && *out != "-") core::log_info("wrote {}", *out);
  });
}

void add_delete(CLI::App* runs, Context& ctx) {
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
    if (r.status == store::RunStatus::kRunning)
      core::log_warn("run {} is still running; its writer will fail", r.uuid.substr(0, 8));
    store->delete_run(r.uuid);
    core::log_info("deleted run {}", r.uuid);
  });
}

// The run's metric keys, or one series, as table, CSV or JSON.
void print_metric(Store& store, const RunInfo& r, const std::string& key, const std::string& f) {
  if (key.empty()) {
    auto ms = store.metric_summaries(r.uuid);
    if (f == "json") {
      format::Json arr = format::Json::array();
      for (const auto& m : ms) arr.push_back(format::metric_summary(m));
      std::cout << arr.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
      return;
    }
    Table t({"KEY", "POINTS", "LAST STEP", "LAST"});
    for (const auto& m : ms)
      t.add_row({m.key, std::to_string(m.count), std::to_string(m.last_step),
                 format::value(m.last_value)});
    t.print(std::cout);
    return;
  }
  auto pts = store.metric(r.uuid, key);
  if (pts.empty()) {
    std::string keys;
    for (const auto& m : store.metric_summaries(r.uuid))
      keys += (keys.empty() ? "" : ", ") + escape_for_display(m.key);
    fail(ErrorKind::kNotFound, "run {} has no metric '{}'; its metrics: {}", r.uuid.substr(0, 8),
         escape_for_display(key), keys.empty() ? "none" : keys);
  }
  if (f == "json") {
    std::cout << format::Json{{"run", r.uuid}, {"key", key}, {"points", format::metric_points(pts)}}
                     .dump(2, ' ', false, format::kInvalidUtf8)
              << "\n";
  } else if (f == "csv") {
    format::metric_csv_header(std::cout, false);
    format::metric_csv(std::cout, nullptr, pts);
  } else {
    Table t({"STEP", "TIME (UTC)", "VALUE"});
    t.align_right(0);
    t.align_right(2);
    for (const auto& p : pts)
      t.add_row({std::to_string(p.step), core::format_utc(p.wall_time), format::value(p.value)});
    t.print(std::cout);
  }
}

void add_metrics(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("metrics", "Print one metric series of a run");
  auto ref = std::make_shared<std::string>();
  auto key = std::make_shared<std::string>();
  auto fmt_name = std::make_shared<std::string>("table");
  cmd->add_option("RUN", *ref, "UUID, unique UUID prefix, or run name")->required();
  cmd->add_option("KEY", *key, "Metric key, e.g. loss (omit to list the run's keys)");
  cmd->add_option("--format,-f", *fmt_name, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  set_example(cmd, "trainscope metrics 3f2a train/loss --format csv > loss.csv");
  cmd->callback([&ctx, ref, key, fmt_name] {
    auto store = ctx.reader();
    print_metric(*store, store->resolve_run(*ref), *key, ctx.json ? "json" : *fmt_name);
  });
}

}  // namespace

void register_runs_commands(CLI::App& app, Context& ctx) {
  auto* runs = app.add_subcommand("runs", "List, show, export and delete recorded runs");
  runs->require_subcommand(1);
  set_example(runs, "trainscope runs show 3f2a");
  add_list(runs, ctx);
  add_show(runs, ctx);
  add_export(runs, ctx);
  add_delete(runs, ctx);
  add_metrics(app, ctx);
}

}  // namespace trainscope::cli
