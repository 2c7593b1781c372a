// `trainscope runs ...` and `trainscope metrics`: reading the store.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/mlflow/mlflow.h"
#include "trainscope/study/study.h"
#include "trainscope/tensorboard/tensorboard.h"

namespace trainscope::cli {
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using store::RunInfo;
using store::Store;

namespace {

bool is_status_column(const std::string& c) {
  return c == "status" || c == "attributes.status" || c == "run.status";
}

// Readers show a run recorded "running" whose writer is gone as "stale"
// (store::liveness); they change nothing in the store.
std::vector<store::Liveness> liveness_of(Store& store, const store::RunQueryResult& res) {
  const double now = store.now();
  std::vector<store::Liveness> out;
  for (const auto& r : res.rows) out.push_back(store.liveness(r.info, now));
  return out;
}

using format::mark_stale;

// The fields of one CSV record as written (quotes kept).
std::vector<std::string> csv_fields(std::string_view record) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : record) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  return out;
}

// format::run_rows_csv, with the status of stale runs shown as such.
void print_runs_csv(const store::RunQueryResult& res, const std::vector<store::Liveness>& live) {
  std::vector<size_t> status;
  for (size_t c = 0; c < res.columns.size(); ++c)
    if (is_status_column(res.columns[c])) status.push_back(c);
  const bool stale = std::any_of(live.begin(), live.end(), [](auto& l) { return l.stale(); });
  if (status.empty() || !stale) return format::run_rows_csv(std::cout, res);
  std::ostringstream head;
  format::run_rows_csv(head, {res.columns, {}, 0});
  std::cout << head.str();
  for (size_t i = 0; i < res.rows.size(); ++i) {
    std::ostringstream one;
    format::run_rows_csv(one, {res.columns, {res.rows[i]}, 1});
    std::string record = one.str().substr(head.str().size());
    if (!live[i].stale()) {
      std::cout << record;
      continue;
    }
    record.pop_back();  // the newline
    auto fields = csv_fields(record);
    for (size_t c : status) fields[c] = live[i].status;
    for (size_t f = 0; f < fields.size(); ++f) std::cout << (f ? "," : "") << fields[f];
    std::cout << "\n";
  }
}

// `runs list` as a table, CSV or JSON. Without --columns, JSON keeps the
// full run objects it always had.
void print_runs(Store& store, const store::RunQueryResult& res, const std::string& fmt_name,
                bool custom) {
  const auto live = liveness_of(store, res);
  if (fmt_name == "json" && !custom) {
    format::Json arr = format::Json::array();
    for (size_t i = 0; i < res.rows.size(); ++i) {
      arr.push_back(format::run(res.rows[i].info, false));
      mark_stale(arr.back(), live[i]);
    }
    std::cout << arr.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else if (fmt_name == "json") {
    format::Json j = format::run_rows(res);
    for (size_t i = 0; i < res.rows.size(); ++i)
      for (const auto& c : res.columns)
        if (is_status_column(c) && live[i].stale()) j["runs"][i][c] = live[i].status;
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else if (fmt_name == "csv") {
    print_runs_csv(res, live);
  } else {
    std::vector<std::string> header;
    for (const auto& c : res.columns) header.push_back(format::run_column_title(c));
    Table t(header);
    for (size_t c = 0; c < res.columns.size(); ++c)
      if (res.columns[c] == "duration" || res.columns[c].rfind("metrics.", 0) == 0)
        t.align_right(c);
    for (size_t i = 0; i < res.rows.size(); ++i) {
      std::vector<std::string> cells;
      for (const auto& c : res.columns)
        cells.push_back(is_status_column(c) && live[i].stale() ? live[i].status
                                                               : format::run_cell(res.rows[i], c));
      t.add_row(std::move(cells));
    }
    if (t.size() == 0) return core::log_info("no runs match");
    t.print(std::cout);
    std::cout.flush();  // before the note on stderr
    if (res.total > static_cast<int64_t>(res.rows.size()))
      core::log_info("showing {} of {} matching runs (--all shows every one)", res.rows.size(),
                     res.total);
  }
}

void print_key_values(std::ostream& o, const char* title,
                      const std::map<std::string, std::string>& kv) {
  o << "\n" << title << " (" << kv.size() << ")\n";
  if (kv.empty()) return;
  Table t({"KEY", "VALUE"});
  for (const auto& [k, v] : kv) t.add_row({k, v});
  t.print(o);
}

void print_header(std::ostream& o, const RunInfo& r, const store::Liveness& live) {
  o << "run         " << r.uuid << "\n";
  o << "name        " << escape_for_display(r.name.empty() ? "-" : r.name) << "\n";
  o << "experiment  " << escape_for_display(r.experiment) << "\n";
  o << "status      " << live.status;
  if (live.stale())
    o << " (recorded as " << to_string(r.status) << "; " << core::terminal_text(live.note) << ")";
  o << "\n";
  o << "started     " << core::format_utc(r.start_time) << "\n";
  o << "ended       " << (r.end_time > 0 ? core::format_utc(r.end_time) : "-") << "\n";
  o << "duration    " << format::duration(store::run_seconds(r, core::unix_now())) << "\n";
  // None recorded (NULL reads 0): "-", not 1970.
  o << "heartbeat   " << (r.heartbeat > 0 ? core::format_utc(r.heartbeat) : "-") << "\n";
  o << "host/pid    " << escape_for_display(r.host) << " / " << r.pid << "\n";
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
  // Every capability's records, whatever the capability: the store counts
  // them by kind.
  auto kinds = store.record_kinds(r.uuid);
  o << "\nrecords (" << kinds.size() << " kind" << (kinds.size() == 1 ? "" : "s") << ")\n";
  if (!kinds.empty()) {
    Table t({"KIND", "RECORDS"});
    t.align_right(1);
    for (const auto& [kind, n] : kinds) t.add_row({kind, std::to_string(n)});
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
  const store::Liveness live = store.liveness(r, store.now());
  if (json) {
    format::Json j = format::run_export(store, r, false);
    mark_stale(j, live);
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  print_header(std::cout, r, live);
  print_key_values(std::cout, "params", store.params(r.uuid));
  print_key_values(std::cout, "tags", store.tags(r.uuid));
  print_metrics_and_artifacts(std::cout, store, r);
}

struct ListArgs {
  store::RunQuery q;
  std::string columns, format = "table";
  bool all = false;
};

void add_list(CLI::App* runs, Context& ctx) {
  auto* cmd = runs->add_subcommand("list", "List and find runs, newest first");
  auto a = std::make_shared<ListArgs>();
  a->q.limit = 50;
  cmd->add_option("--experiment,-e", a->q.base.experiment, "Only runs of this experiment");
  cmd->add_option("--status,-s", a->q.status,
                  "Only runs shown with this status (created, running, finished, failed, "
                  "killed, stopped; stale: recorded running, but its writer is gone)");
  cmd->add_option("--filter,-F", a->q.filter,
                  "Only runs matching this expression, e.g. \"metrics.test/accuracy > 0.9 and "
                  "params.optimizer.name = 'adam'\" (README: Finding runs)");
  cmd->add_option("--columns,-c", a->columns,
                  "Comma-separated fields to show: metrics.KEY, params.KEY, tags.KEY, params.*, "
                  "uuid, name, experiment, status, start_time, end_time, duration, host");
  cmd->add_option("--sort", a->q.sort,
                  "Sort by fields, e.g. \"metrics.test/accuracy desc, start_time\" or "
                  "-metrics.loss (missing values last)");
  cmd->add_option("--format,-f", a->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->add_option("--limit,-n", a->q.limit, "Show at most N runs (0: all)");
  cmd->add_option("--offset", a->q.offset, "Skip the first N matching runs (paging)");
  cmd->add_flag("--all,-a", a->all, "Show every run (same as --limit 0)");
  set_example(cmd,
              "trainscope runs list --filter \"metrics.test/accuracy > 0.9 and "
              "params.optimizer.name = 'adam'\" \\\n"
              "      --columns name,params.optimizer.lr,metrics.test/accuracy "
              "--sort \"-metrics.test/accuracy\" --format csv");
  cmd->callback([&ctx, a] {
    if (a->q.limit < 0) fail(ErrorKind::kUsage, "--limit must be >= 0 (got {})", a->q.limit);
    if (a->q.offset < 0) fail(ErrorKind::kUsage, "--offset must be >= 0 (got {})", a->q.offset);
    if (a->all) a->q.limit = 0;
    a->q.columns = core::split_given_list(a->columns, "--columns");
    auto store = ctx.reader();
    // The status is the one readers show (store::RunQuery::status).
    print_runs(*store, store::query_runs(*store, a->q), ctx.json ? "json" : a->format,
               !a->q.columns.empty());
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

struct ExportArgs {
  std::vector<std::string> refs;
  std::string filter, experiment, format = "csv", out, scalars = "double";
};

// The runs an export names: given references, else every run matching the
// filter and experiment.
std::vector<RunInfo> export_runs(Store& store, const ExportArgs& a) {
  std::vector<RunInfo> runs = store.resolve_runs(a.refs);
  if (!a.refs.empty() && a.filter.empty() && a.experiment.empty()) return runs;
  store::RunQuery q;
  q.filter = a.filter;
  q.base.experiment = a.experiment;
  auto found = store::query_runs(store, q);
  std::vector<RunInfo> matched;
  for (auto& row : found.rows)
    if (a.refs.empty() || std::any_of(runs.begin(), runs.end(),
                                      [&](const RunInfo& r) { return r.uuid == row.info.uuid; }))
      matched.push_back(std::move(row.info));
  if (!a.refs.empty()) return matched;
  // What every reader of a study counts (study::counted_runs): the attempts
  // a study set aside only when named.
  const size_t all = matched.size();
  matched = study::counted_runs(store, std::move(matched));
  if (matched.size() < all)
    core::log_info(
        "{} run(s) a study set aside left out (study.superseded_by, or outside its plan): name "
        "them to export them",
        all - matched.size());
  return matched;
}

// "[12/40] runs exported" on a terminal, for more than one run.
std::function<void(size_t)> export_progress(size_t total) {
  auto count = counter("runs exported");
  if (!count || total < 2) return {};
  return [count, total](size_t done) { count(done, total); };
}

void write_export(Store& store, const std::vector<RunInfo>& runs, const ExportArgs& a, bool json) {
  const bool one = runs.size() == 1 && a.refs.size() == 1 && a.filter.empty();
  auto progress = export_progress(runs.size());
  const double now = store.now();
  auto whole = [&](const RunInfo& r) {
    format::Json j = format::run_export(store, r, true);
    mark_stale(j, store.liveness(r, now));
    return j;
  };
  write_output(a.out, [&](std::ostream& o) {
    if (!json && one) return format::run_metrics_csv(o, store, runs[0]);
    if (!json) return format::runs_metrics_csv(o, store, runs, progress);
    if (one) {
      o << whole(runs[0]).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
      return;
    }
    format::Json arr = format::Json::array();
    for (size_t i = 0; i < runs.size(); ++i) {
      arr.push_back(whole(runs[i]));
      if (progress) progress(i + 1);
    }
    o << arr.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  });
}

// --format tfevents: a TensorBoard log folder per run inside --out.
void write_tfevents(Store& store, const std::vector<RunInfo>& runs, const ExportArgs& a,
                    bool json) {
  tensorboard::ExportOptions o{a.out, tensorboard::parse_scalar_type(a.scalars)};
  const auto done = tensorboard::export_runs(store, runs, o, export_progress(runs.size()));
  int64_t points = 0, histograms = 0;
  format::Json j = format::Json::array();
  for (const auto& r : done) {
    points += r.points, histograms += r.histograms;
    j.push_back({{"uuid", r.uuid},
                 {"file", r.file.string()},
                 {"points", r.points},
                 {"histograms", r.histograms}});
  }
  if (json) {
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  std::cout << fmt::format("wrote {} run{} ({} scalar points as {}, {} histograms) into {}\n",
                           done.size(), done.size() == 1 ? "" : "s", points, a.scalars, histograms,
                           core::escape_for_display(a.out));
  for (const auto& r : done)
    core::log_debug("{}: {} points, {} histograms -> {}", core::short_uuid(r.uuid), r.points,
                    r.histograms, r.file.string());
}

// --format mlflow: runs into the MLflow tracking store named by --out.
void write_mlflow(Store& store, const std::vector<RunInfo>& runs, const ExportArgs& a, bool json) {
  const auto bridge = mlflow::find_bridge(std::filesystem::read_symlink("/proc/self/exe"));
  const auto done = mlflow::export_runs(store, runs, {a.out}, bridge);
  int64_t points = 0, artifacts = 0, already = 0;
  format::Json j = format::Json::array();
  for (const auto& r : done) {
    points += r.points, artifacts += r.artifacts, already += r.already;
    j.push_back({{"uuid", r.uuid},
                 {"mlflow_run_id", r.mlflow_run_id},
                 {"points", r.points},
                 {"artifacts", r.artifacts},
                 {"already_exported", r.already}});
  }
  if (json) {
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  std::cout << fmt::format(
      "wrote {} run{} ({} metric points, {} artifacts) into {}{}\n", done.size() - already,
      done.size() - already == 1 ? "" : "s", points, artifacts, escape_for_display(a.out),
      already ? fmt::format("; {} exported before, left as they are", already) : "");
}

void add_export(CLI::App* runs, Context& ctx) {
  auto* cmd = runs->add_subcommand(
      "export",
      "Export runs' metric points (CSV, one long table), everything (JSON) or TensorBoard log "
      "folders (tfevents)");
  auto a = std::make_shared<ExportArgs>();
  cmd->add_option("RUN", a->refs, "UUIDs, unique UUID prefixes or run names (default: all runs)");
  cmd->add_option("--filter,-F", a->filter, "Only runs matching this expression (as runs list)");
  cmd->add_option("--experiment,-e", a->experiment, "Only runs of this experiment");
  cmd->add_option("--format,-f", a->format,
                  "csv (one row per metric point: run,name,key,step,wall_time,value; one run: "
                  "key,step,wall_time,value), json (every run whole), tfevents (a TensorBoard "
                  "log folder per run inside --out DIR: scalars and probe histograms) or mlflow "
                  "(into the MLflow tracking store --out URI: sqlite:///mlflow.db, a folder, "
                  "http://host:5000; MLflow's client runs in TRAINSCOPE_PYTHON or python3)")
      ->check(CLI::IsMember({"csv", "json", "tfevents", "mlflow"}));
  cmd->add_option(
      "--out,-o", a->out,
      "Write to this file instead of stdout (tfevents: the folder, required; mlflow: the "
      "tracking URI, required)");
  cmd->add_option("--scalars", a->scalars,
                  "tfevents: double (DT_DOUBLE tensors, exact) or float32 (simple_value)")
      ->check(CLI::IsMember({"double", "float32"}));
  set_example(
      cmd,
      "trainscope runs export --filter \"params.optimizer.name = 'adam'\" --out points.csv\n"
      "  trainscope runs export --filter \"name like 'demo%'\" --format tfevents --out logs\n"
      "  tensorboard --logdir logs\n"
      "  trainscope runs export --format mlflow --out sqlite:///mlflow.db");
  cmd->callback([&ctx, a] {
    if (a->format == "tfevents" && (a->out.empty() || a->out == "-"))
      fail(ErrorKind::kUsage,
           "runs export --format tfevents writes a folder per run: name the folder with --out "
           "DIR (arguments name runs)");
    if (a->format == "mlflow" && (a->out.empty() || a->out == "-"))
      fail(ErrorKind::kUsage,
           "runs export --format mlflow writes into an MLflow tracking store: name it with --out "
           "URI, e.g. --out sqlite:///mlflow.db (arguments name runs)");
    if (a->format != "tfevents" && a->format != "mlflow")
      core::check_output_file(a->out);  // before any work
    auto store = ctx.reader();
    std::vector<std::string> uuids;  // a run named twice counts once
    for (const auto& r : store->resolve_runs(a->refs)) uuids.push_back(r.uuid);
    a->refs = uuids;
    auto found = export_runs(*store, *a);
    if (found.empty()) fail(ErrorKind::kNotFound, "no runs match; nothing exported");
    if (a->format == "tfevents") return write_tfevents(*store, found, *a, ctx.json);
    if (a->format == "mlflow") return write_mlflow(*store, found, *a, ctx.json);
    write_export(*store, found, *a, a->format == "json" || ctx.json);
    if (!a->out.empty() && a->out != "-")
      core::log_info("wrote {} ({} run{})", a->out, found.size(), found.size() == 1 ? "" : "s");
  });
}

struct DeleteArgs {
  std::string ref;
  bool yes = false, with_children = false, keep_children = false;
};

void delete_run(Context& ctx, const DeleteArgs& a) {
  auto store = ctx.store();
  RunInfo r = store->resolve_run(a.ref);
  const std::string id = core::short_uuid(r.uuid);
  const std::string name = r.name.empty() ? "unnamed" : escape_for_display(r.name);
  if (!a.yes) fail(ErrorKind::kUsage, "refusing to delete run {} ({}) without --yes", id, name);
  // Its children but itself (a damaged store may make a run its own parent).
  const auto below = store->list_runs({.parent_uuid = r.uuid});
  const size_t kids = static_cast<size_t>(std::count_if(
      below.begin(), below.end(), [&](const store::RunInfo& k) { return k.uuid != r.uuid; }));
  if (kids > 0 && !a.with_children && !a.keep_children)
    fail(ErrorKind::kConflict,
         "run {} ({}) has {} child run{} (a study's trainings); deleting it alone would orphan "
         "them: add --with-children to delete them too, or --keep-children to keep them as runs "
         "of their own",
         id, name, kids, kids == 1 ? "" : "s");
  if (r.status == store::RunStatus::kRunning)
    core::log_warn("run {} is still running; its writer will fail", id);
  using Children = Store::ChildRuns;
  const size_t others = store->delete_run(r.uuid, a.with_children   ? Children::kDelete
                                                  : a.keep_children ? Children::kDetach
                                                                    : Children::kRefuse);
  if (kids == 0) return core::log_info("deleted run {}", r.uuid);
  // Every run below it goes with --with-children, its children's too.
  core::log_info("deleted run {}{}", r.uuid,
                 !a.with_children ? fmt::format("; its {} child run(s) are kept, detached", others)
                 : others == kids ? fmt::format(" and its {} child run(s)", kids)
                                  : fmt::format(" and the {} run(s) below it: its {} child run(s) "
                                                "and theirs",
                                                others, kids));
}

void add_delete(CLI::App* runs, Context& ctx) {
  auto* cmd = runs->add_subcommand("delete", "Delete a run with its params, metrics and artifacts");
  auto a = std::make_shared<DeleteArgs>();
  cmd->add_option("RUN", a->ref, "UUID, unique UUID prefix, or run name")->required();
  cmd->add_flag("--yes,-y", a->yes, "Really delete (required)");
  auto* with = cmd->add_flag("--with-children", a->with_children,
                             "Also delete the run's child runs (a study's trainings)");
  cmd->add_flag("--keep-children", a->keep_children, "Keep the run's child runs, without a parent")
      ->excludes(with);
  set_example(cmd, "trainscope runs delete 3f2a --yes");
  cmd->callback([&ctx, a] { delete_run(ctx, *a); });
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
    if (f == "csv") return format::metric_summaries_csv(std::cout, ms);
    Table t({"KEY", "POINTS", "LAST STEP", "LAST"});
    for (const auto& m : ms)
      t.add_row({m.key, std::to_string(m.count), std::to_string(m.last_step),
                 format::value(m.last_value)});
    t.print(std::cout);
    return;
  }
  auto pts = store.metric(r.uuid, key);
  if (pts.empty()) {
    const auto ms = store.metric_summaries(r.uuid);
    std::string keys;
    for (size_t i = 0; i < ms.size() && i < 8; ++i)
      keys += (keys.empty() ? "" : ", ") + escape_for_display(ms[i].key);
    if (ms.size() > 8)
      keys += fmt::format(" and {} more (`trainscope metrics {}` lists them)", ms.size() - 8,
                          core::short_uuid(r.uuid));
    fail(ErrorKind::kNotFound, "run {} has no metric '{}'; its metrics: {}",
         core::short_uuid(r.uuid), escape_for_display(key), keys.empty() ? "none" : keys);
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
  add_view_command(runs, ctx);
  add_metrics(app, ctx);
}

}  // namespace trainscope::cli
