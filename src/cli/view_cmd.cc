// `trainscope runs view`: a capability's view of one run (store/views.h),
// the same table the dashboard draws.
#include <cctype>
#include <iostream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/store/views.h"

namespace trainscope::cli {
namespace {

struct ViewArgs {
  std::string run, name, format = "table", out;
};

// The views the run holds records of: name, title, records; in the
// format `f` (table, csv or json).
void list_views(store::Store& s, const store::RunInfo& r, const std::string& f, std::ostream& out) {
  const auto kinds = s.record_kinds(r.uuid);
  const auto views = store::views_of(s, r.uuid);
  if (f == "json") {
    format::Json arr = format::Json::array();
    for (const auto& v : views)
      arr.push_back({{"name", v.name}, {"title", v.title}, {"records", kinds.at(v.kind)}});
    out << arr.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  if (f == "csv") {
    out << "name,title,records\n";
    for (const auto& v : views)
      out << core::csv_field(v.name) << "," << core::csv_field(v.title) << "," << kinds.at(v.kind)
          << "\n";
    return;
  }
  if (views.empty()) {
    std::string all;
    for (const auto& v : store::views()) all += (all.empty() ? "" : ", ") + v.name;
    out << fmt::format("run {} holds no capability's view (the views: {})\n",
                       core::short_uuid(r.uuid), all.empty() ? "none" : all);
    return;
  }
  Table t({"VIEW", "TITLE", "RECORDS"});
  t.align_right(2);
  for (const auto& v : views) t.add_row({v.name, v.title, std::to_string(kinds.at(v.kind))});
  t.print(out);
}

void print_view(store::Store& s, const store::RunInfo& r, const ViewArgs& a, bool json) {
  const store::View v = store::find_view_of(s, r, a.name);
  const store::ViewTable t = store::read_view(s, r, v);
  const std::string f = json ? "json" : a.format;
  write_output(a.out, [&](std::ostream& o) {
    if (f == "json") {
      format::Json j = format::view(v, t);
      j["run"] = r.uuid;
      o << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    } else if (f == "csv") {
      format::view_csv(o, t);
    } else {
      std::vector<std::string> header;
      for (std::string c : t.columns) {
        for (char& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        header.push_back(std::move(c));
      }
      Table table(header);
      for (const auto& row : t.rows) {
        std::vector<std::string> cells;
        for (const auto& c : row) cells.push_back(format::view_cell(c));
        table.add_row(std::move(cells));
      }
      table.print(o);
    }
  });
}

}  // namespace

void add_view_command(CLI::App* runs, Context& ctx) {
  auto* cmd = runs->add_subcommand(
      "view", "Show a capability's view of a run (what the dashboard draws), or list its views");
  auto a = std::make_shared<ViewArgs>();
  cmd->add_option("RUN", a->run, "UUID, unique UUID prefix, or run name")->required();
  cmd->add_option("NAME", a->name, "The view, e.g. drift (omit to list the run's views)");
  cmd->add_option("--format,-f", a->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->add_option("--out,-o", a->out, "Write to this file (default: stdout)");
  set_example(cmd, "trainscope runs view 3f2a drift --format csv > drift.csv");
  cmd->callback([&ctx, a] {
    auto store = ctx.reader();
    const store::RunInfo r = store->resolve_run(a->run);
    if (a->name.empty())
      return write_output(a->out, [&](std::ostream& o) {
        list_views(*store, r, ctx.json ? "json" : a->format, o);
      });
    print_view(*store, r, *a, ctx.json);
  });
}

}  // namespace trainscope::cli
