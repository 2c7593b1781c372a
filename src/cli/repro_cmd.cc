// Reproducibility commands: env, env diff, card, checklist (here), diff and
// rerun (parsed here, run by the torch half).
#include <iostream>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/repro/diff.h"
#include "trainscope/repro/documents.h"

namespace trainscope::cli {

namespace {

// This machine's manifest; libtorch's facts only when asked for (loading
// libtorch costs most of a second).
env::Manifest this_machine(bool with_torch) {
  env::Manifest m = env::capture_machine();
  if (with_torch) m.merge(torch_commands().torch_environment());
  return m;
}

void print_manifest(const env::Manifest& m, bool json) {
  if (json) {
    std::cout << format::Json(m).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
    return;
  }
  Table t({"KEY", "VALUE"});
  for (const auto& [k, v] : m) t.add_row({k, v.size() > 120 ? v.substr(0, 117) + "..." : v});
  t.print(std::cout);
}

void env_diff(Context& ctx, const std::string& a, const std::string& b, bool with_torch) {
  auto store = ctx.reader();
  store::RunInfo ra = store->resolve_run(a);
  env::Manifest ma = repro::run_manifest(*store, ra);
  if (store->environment(ra.uuid).empty())
    core::log_warn("run {} has no environment manifest recorded", core::short_uuid(ra.uuid));
  std::vector<env::Difference> diffs;
  std::string label_b;
  if (b.empty()) {
    // Only machine facts are comparable with a machine.
    diffs = repro::machine_differences(ma, this_machine(with_torch), with_torch);
    label_b = "this machine";
  } else {
    store::RunInfo rb = store->resolve_run(b);
    diffs = env::diff(ma, repro::run_manifest(*store, rb));
    label_b = core::short_uuid(rb.uuid);
  }
  if (ctx.json) {
    std::cout << format::differences(diffs).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else if (diffs.empty()) {
    std::cout << "no differences\n";
  } else {
    std::cout << diffs.size() << " difference(s):";
    print_differences(std::cout, diffs, core::short_uuid(ra.uuid), label_b);
  }
}

void add_env(CLI::App& app, Context& ctx) {
  auto* envc = app.add_subcommand("env", "Show this machine's environment manifest");
  auto with_torch = std::make_shared<bool>(false);
  envc->add_flag("--with-torch", *with_torch,
                 "Add libtorch's facts (version, BLAS loaded, threads, determinism flags); loads "
                 "libtorch");
  set_example(envc, "trainscope env --with-torch --json > env.json");
  envc->callback([&ctx, envc, with_torch] {
    if (!envc->get_subcommands().empty()) return;
    print_manifest(this_machine(*with_torch), ctx.json);
  });
  auto* d = envc->add_subcommand(
      "diff", "Every environment field that differs between two runs (or a run and this machine)");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  d->add_option("A", *a, "Run")->required();
  d->add_option("B", *b, "Run (default: this machine)");
  set_example(d, "trainscope env diff 3f2a 9c1b");
  d->callback([&ctx, a, b, with_torch] { env_diff(ctx, *a, *b, *with_torch); });
}

void add_diff_and_rerun(CLI::App& app, Context& ctx) {
  auto* cmd =
      app.add_subcommand("diff", "Where two runs first differ: step, tensors, numeric differences");
  auto d = std::make_shared<DiffArgs>();
  cmd->add_option("A", d->a, "Run")->required();
  cmd->add_option("B", d->b, "Run")->required();
  cmd->add_flag("--no-replay", d->no_replay,
                "Do not replay from a checkpoint to measure differences");
  set_example(cmd, "trainscope diff threads1 threads2");
  cmd->callback([&ctx, d] { torch_commands().diff(ctx, *d); });

  auto* rr = app.add_subcommand(
      "rerun", "Re-execute a recorded run from its stored config, seeds and settings");
  auto r = std::make_shared<RerunArgs>();
  rr->add_option("RUN", r->run, "Run to re-execute")->required();
  rr->add_flag("--verify", r->verify, "Compare fingerprints step by step with the original");
  rr->add_flag("--force", r->force, "Run even when a dataset file's hash changed");
  set_example(rr, "trainscope rerun demo --verify");
  rr->callback([&ctx, r] { torch_commands().rerun(ctx, *r); });
}

void add_card(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("card", "Write a Model Card (Markdown) for a run");
  auto ref = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("RUN", *ref, "Run")->required();
  cmd->add_option("--out,-o", *out, "Write to this file instead of stdout");
  set_example(cmd, "trainscope card demo --out MODEL_CARD.md");
  cmd->callback([&ctx, ref, out] {
    core::check_output_file(*out);
    auto store = ctx.reader();
    const std::string card = repro::model_card(*store, store->resolve_run(*ref));
    write_output(*out, [&](std::ostream& o) { o << card; });
  });
}

void add_checklist(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("checklist",
                                 "Answer the ML Reproducibility Checklist items the records can");
  auto ref = std::make_shared<std::string>();
  cmd->add_option("RUN", *ref, "Run")->required();
  set_example(cmd, "trainscope checklist demo");
  cmd->callback([&ctx, ref] {
    auto store = ctx.reader();
    auto items = repro::checklist(*store, store->resolve_run(*ref));
    if (ctx.json) {
      std::cout << format::checklist(items).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
      return;
    }
    for (const auto& i : items)
      std::cout << (i.answered ? "[x] " : "[ ] ") << i.question << ": " << i.answer << "\n";
  });
}

}  // namespace

void register_repro_commands(CLI::App& app, Context& ctx) {
  add_env(app, ctx);
  add_diff_and_rerun(app, ctx);
  add_card(app, ctx);
  add_checklist(app, ctx);
}

}  // namespace trainscope::cli
