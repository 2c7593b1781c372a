// diff, rerun, and libtorch's facts for `env --with-torch`.
#include <iostream>

#include "../output.h"
#include "progress.h"
#include "torch_cli.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/format/format.h"
#include "trainscope/replay/replay.h"
#include "trainscope/repro/code.h"
#include "trainscope/repro/json.h"
#include "trainscope/train/torch_env.h"

namespace trainscope::cli::torch_cli {

namespace {

std::string fmt_opt(const std::optional<double>& v) {
  return v ? fmt::format("{:.4f}", *v) : std::string("-");
}

void print_replay(std::ostream& o, const repro::RunDiff& d) {
  if (d.replay_from) {
    o << "\nreplayed both from the checkpoint at step " << *d.replay_from << " to step "
      << d.first_diff_step << (d.replay_reproduced ? " (reproduces the recorded hashes)" : "")
      << ":\n";
    Table t({"TENSOR", "DIFFERING", "MAX ABS", "MAX REL", "MAX ULP"});
    for (size_t c = 1; c < 5; ++c) t.align_right(c);
    for (const auto& x : d.deltas)
      t.add_row({x.name, fmt::format("{}/{}", x.differing, x.elements),
                 fmt::format("{:.3g}", x.max_abs), fmt::format("{:.3g}", x.max_rel),
                 fmt::format("{:.0f}", x.max_ulp)});
    t.print(o);
  }
  if (!d.replay_note.empty()) o << "note: " << core::terminal_text(d.replay_note) << "\n";
}

void print_fingerprints(std::ostream& o, const repro::RunDiff& d) {
  o << "\nfingerprints: ";
  if (!d.have_fingerprints) {
    o << "missing in " << (d.steps_a == 0 ? "A" : "B")
      << " (record with fingerprint.every_steps > 0); step-level comparison skipped\n";
  } else if (d.hash_a != d.hash_b) {
    o << "the runs hash with different functions (A " << core::escape_for_display(d.hash_a)
      << ", B " << core::escape_for_display(d.hash_b)
      << ": one trained on a CPU, the other on a GPU); step-level comparison skipped\n";
  } else if (!d.same_tensors) {
    o << "the runs hash different tensor sets; step-level comparison skipped\n";
  } else if (d.identical) {
    o << "BIT-IDENTICAL at all " << d.common_steps << " fingerprinted steps\n";
  } else if (d.first_diff_step < 0) {
    o << "identical over the " << d.common_steps << " steps both have (A has " << d.steps_a
      << ", B has " << d.steps_b << ")\n";
  } else {
    o << (d.first_diff_step <= 1 ? std::string("different from the first step; ")
                                 : fmt::format("identical up to step {}; ", d.first_diff_step - 1))
      << "first difference at step " << d.first_diff_step << " in " << d.differing_tensors.size()
      << " tensor(s), forward order:\n";
    for (size_t i = 0; i < d.differing_tensors.size(); ++i) {
      if (i == 12) {
        o << "    ... and " << d.differing_tensors.size() - 12 << " more\n";
        break;
      }
      o << "    " << core::escape_for_display(d.differing_tensors[i]) << "\n";
    }
    print_replay(o, d);
  }
}

void print_curves_and_environment(std::ostream& o, const repro::RunDiff& d) {
  if (d.loss_steps_compared == 0)  // no maximum over nothing (twenty-third hunt, A-D1)
    o << "\nmetric curves: train/loss: no step both runs recorded";
  else
    o << "\nmetric curves: max |train/loss A - B| = " << format::value(d.max_loss_diff) << " over "
      << d.loss_steps_compared << " common steps (largest at step " << d.max_loss_diff_step << ")";
  o << "\nfinal test accuracy: A " << fmt_opt(d.final_accuracy_a) << ", B "
    << fmt_opt(d.final_accuracy_b);
  if (d.final_accuracy_a && d.final_accuracy_b)
    o << fmt::format(", difference {:+.2f} percentage points",
                     (*d.final_accuracy_b - *d.final_accuracy_a) * 100);
  o << "\n";
  if (d.environment.empty()) return;
  o << "\nenvironment differences (" << d.environment.size()
    << "; `trainscope env diff` shows them):";
  size_t shown = 0;
  for (const auto& e : d.environment) {
    if (e.group == "data" || e.key == "system.hostname") continue;
    if (++shown > 8) break;
    auto cut = [](const std::optional<std::string>& v) {
      return core::escape_cut(env::side_text(v), 60);
    };
    o << "\n  " << core::escape_for_display(e.key) << ": " << cut(e.a) << " -> " << cut(e.b);
  }
  o << "\n";
}

void print_run_diff(std::ostream& o, const repro::RunDiff& d) {
  o << "A " << d.a << "\nB " << d.b << "\n";
  if (!d.same_model)
    o << "\nThe runs train different models (" << core::escape_for_display(d.model_a) << " vs "
      << core::escape_for_display(d.model_b)
      << "): only configs, environments and metric curves are compared.\n";
  if (!d.config.empty()) {
    o << "\nconfig and seeds that differ:";
    print_differences(o, d.config, "A", "B");
  }
  print_fingerprints(o, d);
  print_curves_and_environment(o, d);
}

// Prints what --verify found; throws when the rerun is not bit-identical.
void verify(store::Store& store, const store::RunInfo& orig, const std::string& rerun_uuid) {
  auto d = repro::diff_runs(store, orig, *store.find_run(rerun_uuid));
  if (!d.have_fingerprints)
    core::fail(core::ErrorKind::kUsage,
               "run {} has no fingerprints to verify against (fingerprint.every_steps was 0)",
               core::short_uuid(orig.uuid));
  if (d.identical) {
    std::cout << "verify: bit-identical at all " << d.common_steps << " steps\n";
    return;
  }
  if (d.hash_a != d.hash_b)
    core::fail(core::ErrorKind::kRuntime,
               "run {} fingerprints with {} and its rerun with {}: their hashes cannot be compared "
               "(the run's tag fingerprint.hash says what it trained on)",
               core::short_uuid(orig.uuid), core::escape_for_display(d.hash_a),
               core::escape_for_display(d.hash_b));
  if (d.first_diff_step >= 0) {
    std::cout << "verify: DIVERGED at step " << d.first_diff_step << " (identical up to step "
              << d.first_diff_step - 1 << "); first tensors: ";
    for (size_t i = 0; i < d.differing_tensors.size() && i < 5; ++i)
      std::cout << (i ? ", " : "") << core::escape_for_display(d.differing_tensors[i]);
    std::cout << "\n  see `trainscope diff " << core::short_uuid(orig.uuid) << " "
              << core::short_uuid(rerun_uuid) << "`\n";
  } else {
    std::cout << "verify: identical over " << d.common_steps << " common steps but lengths differ ("
              << d.steps_a << " vs " << d.steps_b << ")\n";
  }
  throw core::Error("rerun is not bit-identical", core::ErrorKind::kRuntime);
}

}  // namespace

void diff(Context& ctx, const DiffArgs& a) {
  auto store = ctx.reader();  // a replay trains in a store of its own
  store::RunInfo ra = store->resolve_run(a.a), rb = store->resolve_run(a.b);
  repro::RunDiff d = repro::diff_runs(*store, ra, rb);
  if (!a.no_replay && d.same_model && d.same_tensors) replay::replay_divergence(*store, ra, rb, d);
  if (ctx.json) {
    std::cout << repro::run_diff_json(d).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else {
    if (ra.uuid == rb.uuid)
      std::cout << fmt::format(
          "note: '{}' and '{}' are the same run ({}): it cannot differ from "
          "itself\n",
          a.a, a.b, core::short_uuid(ra.uuid));
    print_run_diff(std::cout, d);
  }
}

// Whether the git tree the run came from still holds its code, and how to
// get that code back.
void report_code(const repro::CodeCheck& c, const store::RunInfo& orig) {
  if (!c.recorded) return;
  if (c.same) {
    core::log_info("code: the git tree holds the code run {} ran", core::short_uuid(orig.uuid));
    return;
  }
  for (const auto& f : c.facts) core::log_warn("code differs: {}", f);
  if (!c.restore.empty())
    core::log_warn("to get the code run {} ran: {}", core::short_uuid(orig.uuid), c.restore);
}

void rerun(Context& ctx, const RerunArgs& a) {
  auto store = ctx.store();
  store::RunInfo orig = store->resolve_run(a.run);
  auto warn = [](const std::vector<env::Difference>& diffs) {
    for (const auto& d : diffs)
      core::log_warn("environment differs: {}: '{}' then, '{}' now", d.key,
                     core::escape_cut(env::side_text(d.a), 100),
                     core::escape_cut(env::side_text(d.b), 100));
    if (diffs.empty()) core::log_info("environment matches the original run");
  };
  report_code(repro::check_code(*store, orig), orig);
  replay::Rerun r;
  try {
    r = replay::rerun(store, orig,
                      {.force = a.force,
                       .command_line = ctx.argv_line,
                       .observers = {std::make_shared<ProgressObserver>()},
                       .before_training = warn});
  } catch (const core::Error& e) {
    // A changed dataset file: the flag that overrides it is this CLI's.
    if (e.kind() != core::ErrorKind::kConflict || a.force) throw;
    throw core::Error(std::string(e.what()) + ", use --force to run anyway", e.kind());
  }
  note_recorded_run(*store, r.result.run_uuid);
  std::cout << fmt::format("rerun {} of {}: {}, {} steps, test accuracy {:.4f}\n",
                           core::short_uuid(r.result.run_uuid), core::short_uuid(orig.uuid),
                           to_string(r.result.status), r.result.steps, r.result.test.accuracy);
  if (a.verify) verify(*store, orig, r.result.run_uuid);
}

env::Manifest torch_environment() { return env::capture_torch(); }

}  // namespace trainscope::cli::torch_cli
