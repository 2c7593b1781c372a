// `trainscope store copy SRC DST`: every run of one store into another.
#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/output.h"
#include "trainscope/core/util.h"
#include "trainscope/store/copy.h"

namespace trainscope::cli {

namespace {

struct CopyArgs {
  std::string src, dst;
  bool no_verify = false;
};

// "[12/40] runs copied" on a terminal.
std::function<void(const store::CopyProgress&)> copy_progress() {
  auto count = counter("runs copied");
  if (!count) return {};
  return [count](const store::CopyProgress& p) { count(p.done, p.total); };
}

void run_copy(const CopyArgs& a) {
  // An empty URI would mean the default store to the library: here it is a
  // mistake, as for --store.
  for (const auto& [what, uri] : {std::pair{"SRC", &a.src}, std::pair{"DST", &a.dst}})
    if (uri->empty())
      core::fail(core::ErrorKind::kUsage,
                 "store copy: {} is empty; name a store, e.g. sqlite:runs.db or "
                 "postgresql://me@db/ts",
                 what);
  auto src = store::Store::open({.uri = a.src, .read_only = true});
  // It copies runs as they are: it judges none (a stale running run stays
  // so, and is not copied again on the next pass).
  auto dst = store::Store::open({.uri = a.dst, .reap = false});
  const auto r = store::copy_store(*src, *dst, copy_progress());
  core::note_recorded(fmt::format("the copy into {} was made in full", dst->describe()));
  std::cout << fmt::format(
      "copied {} runs ({} metric points, {} artifacts) from {} to {}; {} already there, {} "
      "copied again\n",
      r.copied + r.recopied, r.points, r.artifacts, core::escape_for_display(src->describe()),
      core::escape_for_display(dst->describe()), r.skipped, r.recopied);
  if (a.no_verify) return;
  for (const auto& run : src->list_runs())
    if (auto d = store::compare_run(*src, *dst, run.uuid); !d.empty())
      core::fail(core::ErrorKind::kStore, "run {} differs after the copy: {}",
                 core::short_uuid(run.uuid), d);
  std::cout << "verified: every run reads back equal\n";
}

}  // namespace

void register_store_commands(CLI::App& app, Context& ctx) {
  auto* st = app.add_subcommand("store", "Whole stores: copy between backends");
  st->require_subcommand(1);
  auto* cmd = st->add_subcommand(
      "copy", "Copy every run (records, points, artifacts) from one store into another");
  auto a = std::make_shared<CopyArgs>();
  cmd->add_option("SRC", a->src, "Store to read (sqlite:PATH, postgresql://...)")->required();
  cmd->add_option("DST", a->dst, "Store to write; created if needed")->required();
  cmd->add_flag("--no-verify", a->no_verify, "Do not read every run back to compare");
  set_example(cmd,
              "trainscope store copy sqlite:trainscope.db sqlite:/backup/trainscope.db\n"
              "  (run it again after an interruption: runs already copied are skipped)");
  set_example(st, "trainscope store copy sqlite:a.db sqlite:b.db");
  cmd->callback([a] { run_copy(*a); });
}

}  // namespace trainscope::cli
