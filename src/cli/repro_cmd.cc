// Reproducibility commands: env, env diff, diff, rerun, card, checklist.
#include <cmath>
#include <fstream>
#include <iostream>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/repro/diff.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::cli {
using core::Error;
using core::ErrorKind;
using core::escape_for_display;
using core::fail;
using core::format_utc;
using core::log_info;
using core::log_warn;
using core::sha256_file;
using store::RunInfo;
using store::RunStatus;

namespace {

env::Manifest this_machine() {
  env::Manifest m = env::capture_machine();
  m.merge(train::capture_torch());
  return m;
}

void print_differences(const std::vector<env::Difference>& diffs, const std::string& a_label,
                       const std::string& b_label) {
  std::string group;
  for (const auto& d : diffs) {
    if (d.group != group) {
      group = d.group;
      std::cout << "\n[" << group << "]\n";
    }
    std::cout << "  " << escape_for_display(d.key) << "\n    " << a_label << ": "
              << escape_for_display(d.a) << "\n    " << b_label << ": " << escape_for_display(d.b)
              << "\n";
  }
}

nlohmann::json differences_json(const std::vector<env::Difference>& diffs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : diffs)
    arr.push_back({{"group", d.group}, {"key", d.key}, {"a", d.a}, {"b", d.b}});
  return arr;
}

std::string fmt_opt(const std::optional<double>& v) {
  return v ? fmt::format("{:.4f}", *v) : std::string("-");
}

void print_run_diff(const repro::RunDiff& d) {
  auto& o = std::cout;
  o << "A " << d.a << "\nB " << d.b << "\n";
  if (!d.same_model)
    o << "\nThe runs train different models (" << d.model_a << " vs " << d.model_b
      << "): only configs, environments and metric curves are compared.\n";
  if (!d.config.empty()) {
    o << "\nconfig and seeds that differ:";
    print_differences(d.config, "A", "B");
  }
  o << "\nfingerprints: ";
  if (!d.have_fingerprints) {
    o << "missing in " << (d.steps_a == 0 ? "A" : "B")
      << " (record with fingerprint.every_steps > 0); step-level comparison skipped\n";
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
      << "first difference at step " << d.first_diff_step << " in " << d.differing_tensors.size() << " tensor(s), forward order:\n";
    for (size_t i = 0; i < d.differing_tensors.size(); ++i) {
      if (i == 12) {
        o << "    ... and " << d.differing_tensors.size() - 12 << " more\n";
        break;
      }
      o << "    " << d.differing_tensors[i] << "\n";
    }
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
    if (!d.replay_note.empty()) o << "note: " << d.replay_note << "\n";
  }
  o << "\nmetric curves: max |loss A - loss B| = " << format_value(d.max_loss_diff) << " over "
    << d.loss_steps_compared << " common steps";
  if (d.max_loss_diff_step >= 0) o << " (largest at step " << d.max_loss_diff_step << ")";
  o << "\nfinal test accuracy: A " << fmt_opt(d.final_accuracy_a) << ", B "
    << fmt_opt(d.final_accuracy_b);
  if (d.final_accuracy_a && d.final_accuracy_b)
    o << fmt::format(", difference {:+.2f} percentage points",
                     (*d.final_accuracy_b - *d.final_accuracy_a) * 100);
  o << "\n";
  if (!d.environment.empty()) {
    o << "\nenvironment differences (" << d.environment.size() << "; `trainscope env diff` shows them):";
    size_t shown = 0;
    for (const auto& e : d.environment) {
      if (e.group == "data" || e.key == "system.hostname") continue;
      if (++shown > 8) break;
      auto cut = [](const std::string& v) {
        return escape_for_display(v.size() > 60 ? v.substr(0, 57) + "..." : v);
      };
      o << "\n  " << e.key << ": " << cut(e.a) << " -> " << cut(e.b);
    }
    o << "\n";
  }
}

nlohmann::json run_diff_json(const repro::RunDiff& d) {
  nlohmann::json deltas = nlohmann::json::array();
  for (const auto& x : d.deltas)
    deltas.push_back({{"tensor", x.name},
                      {"elements", x.elements},
                      {"differing", x.differing},
                      {"max_abs", x.max_abs},
                      {"max_rel", x.max_rel},
                      {"max_ulp", x.max_ulp}});
  return {{"a", d.a},
          {"b", d.b},
          {"same_model", d.same_model},
          {"have_fingerprints", d.have_fingerprints},
          {"bit_identical", d.identical},
          {"common_steps", d.common_steps},
          {"first_diff_step", d.first_diff_step},
          {"differing_tensors", d.differing_tensors},
          {"replay_from", d.replay_from ? nlohmann::json(*d.replay_from) : nlohmann::json()},
          {"replay_reproduced", d.replay_reproduced},
          {"deltas", deltas},
          {"max_loss_diff", json_number(d.max_loss_diff)},
          {"final_accuracy_a", d.final_accuracy_a ? nlohmann::json(*d.final_accuracy_a) : nlohmann::json()},
          {"final_accuracy_b", d.final_accuracy_b ? nlohmann::json(*d.final_accuracy_b) : nlohmann::json()},
          {"config", differences_json(d.config)},
          {"environment", differences_json(d.environment)}};
}

// Groups a rerun warns about: what differs in the machine, not the run.
bool machine_group(const std::string& g) {
  return g == "hardware" || g == "driver" || g == "libraries" || g == "system" || g == "threads" ||
         g == "flags" || g == "env" || g == "build";
}

std::string param_or(const std::map<std::string, std::string>& p, const std::string& k,
                     const std::string& fallback = "_(not recorded)_") {
  auto it = p.find(k);
  return it == p.end() ? fallback : it->second;
}

}  // namespace

void register_repro_commands(CLI::App& app, Context& ctx) {
  // env / env diff
  {
    auto* envc = app.add_subcommand("env", "Show this machine's environment manifest");
    set_example(envc, "trainscope env --json > env.json");
    envc->callback([&ctx, envc] {
      if (envc->get_subcommands().size() > 0) return;
      auto m = this_machine();
      if (ctx.json) {
        std::cout << nlohmann::json(m).dump(2) << "\n";
        return;
      }
      Table t({"KEY", "VALUE"});
      for (const auto& [k, v] : m) t.add_row({k, v.size() > 120 ? v.substr(0, 117) + "..." : v});
      t.print(std::cout);
    });
    auto* d = envc->add_subcommand("diff", "Every environment field that differs between two runs (or a run and this machine)");
    auto a = std::make_shared<std::string>();
    auto b = std::make_shared<std::string>();
    d->add_option("A", *a, "Run")->required();
    d->add_option("B", *b, "Run (default: this machine)");
    set_example(d, "trainscope env diff 3f2a 9c1b");
    d->callback([&ctx, a, b] {
      auto store = ctx.store();
      RunInfo ra = store->resolve_run(*a);
      env::Manifest ma = repro::run_manifest(*store, ra), mb;
      std::string label_b;
      if (b->empty()) {
        mb = this_machine();
        label_b = "this machine";
        // Only machine facts are comparable with a machine.
        std::erase_if(ma, [](const auto& kv) { return !machine_group(kv.first.substr(0, kv.first.find('.'))); });
      } else {
        RunInfo rb = store->resolve_run(*b);
        mb = repro::run_manifest(*store, rb);
        label_b = rb.uuid.substr(0, 8);
      }
      if (ma.empty()) log_warn("run {} has no environment manifest recorded", ra.uuid.substr(0, 8));
      auto diffs = env::diff(ma, mb);
      if (ctx.json) {
        std::cout << differences_json(diffs).dump(2) << "\n";
        return;
      }
      if (diffs.empty()) {
        std::cout << "no differences\n";
        return;
      }
      std::cout << diffs.size() << " difference(s):";
      print_differences(diffs, ra.uuid.substr(0, 8), label_b);
    });
  }
  // diff
  {
    auto* cmd = app.add_subcommand("diff", "Where two runs first differ: step, tensors, numeric differences");
    auto a = std::make_shared<std::string>();
    auto b = std::make_shared<std::string>();
    auto no_replay = std::make_shared<bool>(false);
    cmd->add_option("A", *a, "Run")->required();
    cmd->add_option("B", *b, "Run")->required();
    cmd->add_flag("--no-replay", *no_replay, "Do not replay from a checkpoint to measure differences");
    set_example(cmd, "trainscope diff threads1 threads2");
    cmd->callback([&ctx, a, b, no_replay] {
      auto store = ctx.store();
      RunInfo ra = store->resolve_run(*a), rb = store->resolve_run(*b);
      auto d = repro::diff_runs(*store, ra, rb, !*no_replay);
      if (ctx.json) {
        std::cout << run_diff_json(d).dump(2) << "\n";
      } else {
        print_run_diff(d);
      }
    });
  }
  // rerun
  {
    auto* cmd = app.add_subcommand("rerun", "Re-execute a recorded run from its stored config, seeds and settings");
    auto ref = std::make_shared<std::string>();
    auto verify = std::make_shared<bool>(false);
    auto force = std::make_shared<bool>(false);
    cmd->add_option("RUN", *ref, "Run to re-execute")->required();
    cmd->add_flag("--verify", *verify, "Compare fingerprints step by step with the original");
    cmd->add_flag("--force", *force, "Run even when a dataset file's hash changed");
    set_example(cmd, "trainscope rerun demo --verify");
    cmd->callback([&ctx, ref, verify, force] {
      auto store = ctx.store();
      RunInfo orig = store->resolve_run(*ref);
      if (orig.config_text.empty())
        fail(ErrorKind::kUsage, "run {} has no recorded config; only `trainscope train` runs can be rerun",
             orig.uuid.substr(0, 8));
      train::Config cfg = train::parse_config(orig.config_text, {}, "run " + orig.uuid.substr(0, 8));
      env::Manifest recorded = store->environment(orig.uuid);
      // Data first: a changed file makes the rerun a different experiment.
      for (const auto& [k, v] : recorded) {
        if (k.rfind("data.sha256.", 0) != 0) continue;
        std::string file = k.substr(12);
        std::string now;
        try {
          now = sha256_file(file);
        } catch (const Error&) {
          now = "(missing)";
        }
        if (now != v) {
          if (!*force)
            fail(ErrorKind::kConflict,
                 "dataset file '{}' changed since run {} (sha256 {} then, {} now); refusing to "
                 "rerun, use --force to run anyway",
                 file, orig.uuid.substr(0, 8), v.substr(0, 12), now.substr(0, 12));
          log_warn("dataset file '{}' changed since the original run (--force)", file);
        }
      }
      env::Manifest here = this_machine();
      std::erase_if(recorded, [](const auto& kv) {
        return !machine_group(kv.first.substr(0, kv.first.find('.')));
      });
      int warned = 0;
      for (const auto& d : env::diff(recorded, here)) {
        if (d.key == "system.hostname" || !machine_group(d.group)) continue;
        log_warn("environment differs: {}: '{}' then, '{}' now", d.key, d.a.substr(0, 100),
                 d.b.substr(0, 100));
        ++warned;
      }
      if (warned == 0) log_info("environment matches the original run");
      train::TrainOptions o;
      o.name = (orig.name.empty() ? orig.uuid.substr(0, 8) : orig.name) + "-rerun";
      o.command_line = ctx.argv_line;
      train::Trainer trainer(cfg, store, o);
      auto r = trainer.run();
      store->set_tag(r.run_uuid, "rerun_of", orig.uuid);
      std::cout << fmt::format("rerun {} of {}: {}, {} steps, test accuracy {:.4f}\n",
                               r.run_uuid.substr(0, 8), orig.uuid.substr(0, 8),
                               to_string(r.status), r.steps, r.test.accuracy);
      if (!*verify) return;
      auto rerun = *store->find_run(r.run_uuid);
      auto d = repro::diff_runs(*store, orig, rerun, /*replay=*/false);
      if (!d.have_fingerprints)
        fail(ErrorKind::kUsage, "run {} has no fingerprints to verify against (fingerprint.every_steps was 0)",
             orig.uuid.substr(0, 8));
      if (d.identical) {
        std::cout << "verify: bit-identical at all " << d.common_steps << " steps\n";
        return;
      }
      if (d.first_diff_step >= 0) {
        std::cout << "verify: DIVERGED at step " << d.first_diff_step << " (identical up to step "
                  << d.first_diff_step - 1 << "); first tensors: ";
        for (size_t i = 0; i < d.differing_tensors.size() && i < 5; ++i)
          std::cout << (i ? ", " : "") << d.differing_tensors[i];
        std::cout << "\n  see `trainscope diff " << orig.uuid.substr(0, 8) << " "
                  << r.run_uuid.substr(0, 8) << "`\n";
      } else {
        std::cout << "verify: identical over " << d.common_steps << " common steps but lengths differ ("
                  << d.steps_a << " vs " << d.steps_b << ")\n";
      }
      throw Error("rerun is not bit-identical", ErrorKind::kRuntime);
    });
  }
  // card
  {
    auto* cmd = app.add_subcommand("card", "Write a Model Card (Markdown) for a run");
    auto ref = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("RUN", *ref, "Run")->required();
    cmd->add_option("--out,-o", *out, "Write to this file instead of stdout");
    set_example(cmd, "trainscope card demo --out MODEL_CARD.md");
    cmd->callback([&ctx, ref, out] {
      auto store = ctx.store();
      RunInfo r = store->resolve_run(*ref);
      auto p = store->params(r.uuid);
      auto e = store->environment(r.uuid);
      auto ms = store->metric_summaries(r.uuid);
      const char* kBlank = "_TODO (a person must write this)_";
      write_output(*out, [&](std::ostream& o) {
        o << "# Model Card: " << (r.name.empty() ? r.uuid.substr(0, 8) : r.name) << "\n\n";
        o << "_Generated by trainscope " << param_or(e, "build.trainscope.version", "?")
          << " from run `" << r.uuid << "`. Sections marked TODO need a person._\n\n";
        o << "## Model details\n\n";
        o << "- Architecture: `" << param_or(p, "model.name") << "` (init `"
          << param_or(p, "model.init") << "`, dropout " << param_or(p, "model.dropout") << ")\n";
        o << "- Training: " << param_or(p, "epochs") << " epochs, batch " << param_or(p, "batch_size")
          << ", optimizer `" << param_or(p, "optimizer.name") << "` lr " << param_or(p, "optimizer.lr")
          << ", schedule `" << param_or(p, "schedule.name") << "`, dtype " << param_or(p, "dtype") << "\n";
        o << "- Seed: " << param_or(p, "seed") << " (streams: init " << param_or(p, "seeds.init")
          << ", data_order " << param_or(p, "seeds.data_order") << ", augment "
          << param_or(p, "seeds.augment") << ", dropout " << param_or(p, "seeds.dropout")
          << "; -1 = derived from seed)\n";
        o << "- Date: " << format_utc(r.start_time) << "; status " << to_string(r.status) << "\n";
        o << "- Developers, license, contact: " << kBlank << "\n\n";
        o << "## Intended use\n\n" << kBlank << "\n\n";
        o << "## Factors\n\n" << kBlank << "\n\n";
        o << "## Metrics\n\n| metric | last | min | max | points |\n| --- | --- | --- | --- | --- |\n";
        for (const auto& m : ms)
          if (m.key.find('/') != std::string::npos && m.key.rfind("train/loss", 0) != 0)
            o << "| " << m.key << " | " << format_value(m.last_value) << " | " << format_value(m.min)
              << " | " << format_value(m.max) << " | " << m.count << " |\n";
        o << "\n## Evaluation data\n\n- Dataset `" << param_or(p, "data.dataset") << "` test split"
          << (param_or(p, "data.test_subset", "0") != "0" ? " (first " + p.at("data.test_subset") + " samples)" : "")
          << "\n";
        for (const auto& [k, v] : e)
          if (k.rfind("data.sha256.", 0) == 0 && k.find("t10k") != std::string::npos)
            o << "- `" << k.substr(12) << "` sha256 `" << v << "`\n";
        o << "\n## Training data\n\n- Dataset `" << param_or(p, "data.dataset") << "`, validation fraction "
          << param_or(p, "data.val_fraction") << ", subset " << param_or(p, "data.train_subset")
          << ", augmentation crop_padding " << param_or(p, "data.crop_padding") << ", hflip "
          << param_or(p, "data.hflip") << "\n";
        for (const auto& [k, v] : e)
          if (k.rfind("data.sha256.", 0) == 0 && k.find("t10k") == std::string::npos)
            o << "- `" << k.substr(12) << "` sha256 `" << v << "`\n";
        o << "\n## Quantitative analyses\n\n- Number of runs behind these figures: 1 (this run). "
             "Variation across seeds: " << kBlank << "\n";
        o << "- Compute: " << param_or(e, "hardware.cpu.model_name") << ", "
          << param_or(e, "hardware.cpu.logical_cores") << " logical cores, "
          << param_or(e, "threads.torch.intra_op") << " intra-op threads, "
          << param_or(e, "driver.gpu") << "; libtorch " << param_or(e, "libraries.torch.version")
          << ", BLAS " << param_or(e, "libraries.blas.loaded") << "\n";
        o << "- Runtime: " << format_duration((r.end_time > 0 ? r.end_time : r.heartbeat) - r.start_time)
          << "\n\n";
        o << "## Ethical considerations\n\n" << kBlank << "\n\n";
        o << "## Caveats and recommendations\n\n- Float32 results can differ across CPUs, thread counts "
             "and kernel choices; see `trainscope diff` and `trainscope rerun --verify`.\n- "
          << kBlank << "\n";
      });
    });
  }
  // checklist
  {
    auto* cmd = app.add_subcommand("checklist", "Answer the ML Reproducibility Checklist items the records can");
    auto ref = std::make_shared<std::string>();
    cmd->add_option("RUN", *ref, "Run")->required();
    set_example(cmd, "trainscope checklist demo");
    cmd->callback([&ctx, ref] {
      auto store = ctx.store();
      RunInfo r = store->resolve_run(*ref);
      auto p = store->params(r.uuid);
      auto e = store->environment(r.uuid);
      // Runs with the same config hash are repeats of this one.
      std::vector<double> acc;
      for (const auto& other : store->list_runs({})) {
        if (other.config_hash != r.config_hash || other.status != RunStatus::kFinished) continue;
        auto pts = store->metric(other.uuid, "test/accuracy");
        if (!pts.empty()) acc.push_back(pts.back().value);
      }
      struct Item {
        std::string question, answer;
        bool answered;
      };
      std::vector<Item> items;
      bool has_env = !e.empty();
      items.push_back({"Compute infrastructure",
                       has_env ? fmt::format("{}; {} logical / {} physical cores; {}; {}; {}",
                                             param_or(e, "hardware.cpu.model_name"),
                                             param_or(e, "hardware.cpu.logical_cores"),
                                             param_or(e, "hardware.cpu.physical_cores"),
                                             param_or(e, "hardware.memory.total"),
                                             param_or(e, "driver.gpu"), param_or(e, "system.os"))
                               : "no environment manifest recorded",
                       has_env});
      items.push_back({"Software versions",
                       has_env ? fmt::format("libtorch {}, BLAS {}, trainscope {}",
                                             param_or(e, "libraries.torch.version"),
                                             param_or(e, "libraries.blas.loaded"),
                                             param_or(e, "build.trainscope.version"))
                               : "not recorded",
                       has_env});
      items.push_back({"Number of training runs (same config)", std::to_string(acc.size()), true});
      if (acc.size() >= 2) {
        double mean = 0;
        for (double v : acc) mean += v;
        mean /= static_cast<double>(acc.size());
        double ss = 0;
        for (double v : acc) ss += (v - mean) * (v - mean);
        double sd = std::sqrt(ss / static_cast<double>(acc.size() - 1));
        items.push_back({"Mean and variation of test accuracy",
                         fmt::format("mean {:.4f}, sample std (ddof=1) {:.4f}, min {:.4f}, max {:.4f}",
                                     mean, sd, *std::min_element(acc.begin(), acc.end()),
                                     *std::max_element(acc.begin(), acc.end())),
                         true});
      } else {
        items.push_back({"Mean and variation of test accuracy",
                         "OPEN: only one finished run with this config; repeat it with other seeds",
                         false});
      }
      items.push_back({"Average runtime",
                       format_duration((r.end_time > 0 ? r.end_time : r.heartbeat) - r.start_time),
                       true});
      items.push_back({"Energy consumption", "OPEN: no energy was metered for this run", false});
      items.push_back({"Hyperparameters and seeds",
                       fmt::format("{} params recorded; seed {}", p.size(), param_or(p, "seed")),
                       !p.empty()});
      items.push_back({"Data (files and hashes)",
                       fmt::format("{} file hashes recorded",
                                   std::count_if(e.begin(), e.end(), [](const auto& kv) {
                                     return kv.first.rfind("data.sha256.", 0) == 0;
                                   })),
                       has_env});
      items.push_back({"Determinism settings and threads",
                       has_env ? fmt::format("deterministic_algorithms {}, mkldnn {}, intra-op threads {}",
                                             param_or(e, "flags.deterministic_algorithms"),
                                             param_or(e, "flags.mkldnn"),
                                             param_or(e, "threads.torch.intra_op"))
                               : "not recorded",
                       has_env});
      items.push_back({"Hyperparameter search ranges and selection", "OPEN: describe by hand", false});
      if (ctx.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& i : items)
          arr.push_back({{"item", i.question}, {"answer", i.answer}, {"answered", i.answered}});
        std::cout << arr.dump(2) << "\n";
        return;
      }
      for (const auto& i : items)
        std::cout << (i.answered ? "[x] " : "[ ] ") << i.question << ": " << i.answer << "\n";
    });
  }
}

}  // namespace trainscope::cli
