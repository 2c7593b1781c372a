// Reproducibility commands: env, env diff, env recreate, card, checklist
// (here), diff and rerun (parsed here, run by the torch half).
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/json.h"
#include "trainscope/env/recreate.h"
#include "trainscope/format/format.h"
#include "trainscope/repro/diff.h"
#include "trainscope/repro/documents.h"
#include "trainscope/repro/json.h"
#include "trainscope/store/artifact_store.h"
#include "trainscope/study/study.h"

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
  for (const auto& [k, v] : m)
    t.add_row({k, v.size() > 120 ? std::string(core::utf8_prefix(v, 117)) + "..." : v});
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
    std::cout << env::differences_json(diffs).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else if (diffs.empty()) {
    std::cout << "no differences\n";
  } else {
    std::cout << diffs.size() << " difference(s):";
    print_differences(std::cout, diffs, core::short_uuid(ra.uuid), label_b);
  }
}

struct RecreateArgs {
  std::string run;
  std::string out;  // folder for the Dockerfile; "" = recreate-<short uuid>
  bool check = false;
};

// snapshot.debian.org's name for the moment the run started.
std::string snapshot_stamp(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

void print_recipe(const env::Recipe& r, const std::vector<env::PinCheck>& checks) {
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
    return s.empty() ? std::string("(none mapped)") : s;
  };
  std::cout << "FROM " << r.image << " (" << r.os
            << (r.debian_version.empty() ? "" : ", " + r.debian_version) << ", " << r.arch
            << ")\nlibtorch: "
            << (r.torch_requirement.empty() ? joined(r.libtorch)
                                            : r.torch_requirement + " from " + r.torch_index)
            << "\nBLAS:     " << joined(r.blas) << "\n";
  if (!r.torch_note.empty()) std::cout << "torch:    " << r.torch_note << ", not pinned\n";
  std::vector<std::string> head = {"PACKAGE", "VERSION", "ARCH", "MAPPED"};
  if (!checks.empty()) head.push_back("CHECK");
  Table t(head);
  for (size_t i = 0; i < r.packages.size(); ++i) {
    const auto& p = r.packages[i];
    std::string mapped = joined(p.objects);
    if (mapped.size() > 60) mapped = std::string(core::utf8_prefix(mapped, 57)) + "...";
    std::vector<std::string> row = {p.name, p.version, p.arch, mapped};
    if (!checks.empty())
      row.push_back(!checks[i].ok                    ? "FAIL"
                    : checks[i].source == "index"    ? "pass"
                    : checks[i].source == "repacked" ? "pass (repacked)"
                                                     : "pass (pool)");
    t.add_row(row);
  }
  t.print(std::cout);
  for (const auto& [name, version] : r.pip) std::cout << "pip: " << name << "==" << version << "\n";
  size_t from_index = 0, from_pool = 0, repacked = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    const auto& c = checks[i];
    if (!c.ok) {
      std::cout << c.pin << ": " << c.message << "\n";
    } else if (c.source == "index") {
      ++from_index;
    } else if (c.source == "repacked") {
      ++repacked;
      std::cout << c.pin << ": " << c.note << " (debs/"
                << env::pool_file_name(r.packages[i], r.arch) << ")\n";
    } else {
      ++from_pool;
      std::cout << c.pin << ": from the pool, " << c.source << "\n";
    }
  }
  const size_t ok = from_index + from_pool + repacked;
  if (!checks.empty())
    std::cout << "check: " << ok << " of " << checks.size()
              << " pinned versions install on a machine with nothing installed: " << from_index
              << " from apt's index, " << from_pool << " from the archives' pools (ADDed in the "
              << "Dockerfile), " << repacked << " repacked from this machine (COPYed from debs/), "
              << checks.size() - ok << " not\n";
}

void env_recreate(Context& ctx, const RecreateArgs& a) {
  auto store = ctx.reader();
  const store::RunInfo run = store->resolve_run(a.run);
  // The default folder and the Dockerfile's comments name the run: a UUID
  // that is not one would put them anywhere.
  const std::string id = core::short_uuid(store::folder_safe_uuid(run.uuid));
  env::Recipe r;
  try {
    r = env::recipe(store->environment(run.uuid), snapshot_stamp(run.start_time));
  } catch (const core::Error& e) {
    core::fail(e.kind(), "run {} cannot be recreated: {}", id, e.what());
  }
  const std::filesystem::path dir = a.out.empty() ? "recreate-" + id : a.out;
  core::check_output_folder(dir);
  if (std::error_code ec; !std::filesystem::create_directories(dir, ec) && ec)
    core::fail(core::ErrorKind::kUsage, "cannot create the folder '{}': {}; give another --out",
               dir.string(), ec.message());
  const std::string about =
      "trainscope run " + id + (run.name.empty() ? "" : " (" + run.name + ")");
  // The pools are searched, and the versions no archive serves repacked from
  // this machine into dir/debs/, only with --check (it needs apt and the
  // network); without, the Dockerfile is written offline, with the SNAPSHOT
  // fallback.
  if (a.check) {
    env::fetch_pool_files(r);
    env::repack_installed(r, {.context_dir = dir});
  }
  core::write_file_atomically(dir / "Dockerfile",
                              [&](std::ostream& o) { o << env::dockerfile(r, about); });
  std::vector<env::PinCheck> checks;
  std::optional<env::PinCheck> torch;
  if (a.check) {
    checks = env::check_pins(r);
    torch = env::check_torch(r);
  }
  if (ctx.json) {
    format::Json j = env::recipe_json(r, checks);
    if (torch) j["torch"]["check"] = {{"ok", torch->ok}, {"message", torch->message}};
    j["run"] = run.uuid;
    j["dockerfile"] = (dir / "Dockerfile").string();
    std::cout << j.dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else {
    print_recipe(r, checks);
    if (torch)
      std::cout << torch->pin << " from " << r.torch_index << ": "
                << (torch->ok ? "pass (the index serves it)" : torch->message) << "\n";
    std::cout << "wrote " << core::escape_for_display((dir / "Dockerfile").string()) << ": "
              << r.packages.size() << " pinned packages; build it with `docker build "
              << core::escape_for_display(dir.string()) << "`\n";
  }
  const auto failed = std::count_if(checks.begin(), checks.end(), [](auto& c) { return !c.ok; });
  if (torch && !torch->ok)
    core::fail(core::ErrorKind::kRuntime, "run {}'s torch wheel cannot be installed again: {}", id,
               torch->message);
  if (failed > 0)
    core::fail(core::ErrorKind::kRuntime,
               "{} of {} pinned versions of run {} cannot be installed from the archives apt "
               "knows here (apt-get install --simulate); see each one's line above",
               failed, checks.size(), id);
}

void add_env_recreate(CLI::App* envc, Context& ctx) {
  auto* cmd = envc->add_subcommand(
      "recreate",
      "Write a Dockerfile that rebuilds a run's software environment: its Debian release and the "
      "exact versions of the packages its process loaded");
  auto a = std::make_shared<RecreateArgs>();
  cmd->add_option("RUN", a->run, "Run")->required();
  cmd->add_option("--out,-o", a->out, "Folder for the Dockerfile (default: recreate-<run>)");
  cmd->add_flag("--check", a->check,
                "Check every pinned version with `apt-get install --simulate` here, as on a "
                "machine with nothing installed (exit code 1 when one fails); a version apt's "
                "index no longer lists is fetched from the archive's pool when it is there, "
                "and the Dockerfile ADDs it; one no archive serves but installed here is "
                "repacked (dpkg-repack) into DIR/debs/, and the Dockerfile COPYs it");
  set_example(cmd, "trainscope env recreate demo --check && docker build recreate-3f2a1b2c");
  cmd->callback([&ctx, a] { env_recreate(ctx, *a); });
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
  add_env_recreate(envc, ctx);
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
    const store::RunInfo run = store->resolve_run(*ref);
    // Its repeats as every reader counts runs: never an attempt a study set aside.
    auto items = repro::checklist(*store, run, study::repeats_of(*store, run));
    if (ctx.json) {
      std::cout << repro::checklist_json(items).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
      return;
    }
    // An answer quotes the store (a CPU's name, a tag): escaped for the terminal.
    for (const auto& i : items)
      std::cout << (i.answered ? "[x] " : "[ ] ") << i.question << ": "
                << core::escape_for_display(i.answer) << "\n";
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
