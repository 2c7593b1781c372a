// `trainscope numerics ...`: the floating-point lab.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/numerics/logmap.h"
#include "trainscope/store/run_recorder.h"
#ifdef TRAINSCOPE_WITH_TORCH
#include "trainscope/numerics/logmap_torch.h"
#include "trainscope/train/torch_env.h"
#endif

namespace fs = std::filesystem;

namespace trainscope::cli {
using core::SvgChart;
using core::csv_field;
using core::format_double;
using core::log_info;
using core::new_uuid;
using store::NewRun;
using store::RunRecorder;
using store::RunStatus;

namespace {

env::Manifest manifest_here() {
  env::Manifest m = env::capture_machine();
#ifdef TRAINSCOPE_WITH_TORCH
  m.merge(train::capture_torch());
#endif
  return m;
}

// Writes `content` to a temporary file, records it as an artifact of the
// run and, when out_dir is set, also copies it there.
void emit_file(RunRecorder& rec, const std::string& name, const std::string& kind,
               const std::string& content, const std::string& out_dir) {
  fs::path tmp = fs::temp_directory_path() / ("trainscope-" + new_uuid().substr(0, 8) + "-" + name);
  std::ofstream(tmp, std::ios::binary) << content;
  rec.add_artifact(tmp, kind, name);
  if (!out_dir.empty()) {
    fs::create_directories(out_dir);
    fs::copy_file(tmp, fs::path(out_dir) / name, fs::copy_options::overwrite_existing);
  }
  fs::remove(tmp);
}

std::string trajectories_csv(const numerics::LogmapResult& res) {
  std::string out = "step,reference";
  for (const auto& v : res.variants) out += "," + csv_field(v.variant.id);
  for (const auto& v : res.variants) out += "," + csv_field("digits:" + v.variant.id);
  out += "\n";
  for (size_t n = 0; n < res.reference.size(); ++n) {
    out += std::to_string(n) + "," + format_double(res.reference[n]);
    for (const auto& v : res.variants) out += "," + format_double(v.x[n]);
    for (const auto& v : res.variants) out += "," + fmt::format("{:.3f}", v.correct_digits[n]);
    out += "\n";
  }
  return out;
}

}  // namespace

void register_numerics_commands(CLI::App& app, Context& ctx) {
  auto* numerics = app.add_subcommand("numerics", "Floating-point lab");
  numerics->require_subcommand(1);
  set_example(numerics, "trainscope numerics logmap --r 3.7 --steps 2000");

  auto* cmd = numerics->add_subcommand(
      "logmap",
      "Logistic map x(n+1) = r*x(n)*(1-x(n)) across formats, operation orders and FMA, "
      "against an exact MPFR reference");
  auto o = std::make_shared<numerics::LogmapOptions>();
  auto name = std::make_shared<std::string>("logmap");
  auto experiment = std::make_shared<std::string>("numerics");
  auto out_dir = std::make_shared<std::string>();
  auto list = std::make_shared<bool>(false);
  cmd->add_option("--x0", o->x0, "Start value in [0, 1] (decimal; the reference uses it exactly)");
  cmd->add_option("--r", o->r, "Parameter in (0, 4]");
  cmd->add_option("--steps", o->steps, "Number of iterations (at most 100000)");
  cmd->add_option("--variants", o->variants, "Only these variant ids (see --list)");
  cmd->add_option("--thresholds", o->thresholds, "Report the first step each |x - ref| exceeds");
  cmd->add_option("--name", *name, "Run name");
  cmd->add_option("--experiment", *experiment, "Experiment to record into");
  cmd->add_option("--out", *out_dir, "Also write trajectories.csv and the SVG plots here");
  cmd->add_flag("--list", *list, "List the variants and exit");
  set_example(cmd, "trainscope numerics logmap --x0 0.4 --r 3.7 --steps 2000 --out logmap/");
  cmd->callback([&ctx, o, name, experiment, out_dir, list] {
#ifdef TRAINSCOPE_WITH_TORCH
    o->extra_variants = numerics::torch_variants();
    o->extra_iterate = numerics::iterate_torch;
#endif
    if (*list) {
      auto all = numerics::available_variants();
      all.insert(all.end(), o->extra_variants.begin(), o->extra_variants.end());
      Table t({"ID", "VARIANT"});
      for (const auto& v : all) t.add_row({v.id, v.name});
      t.print(std::cout);
      return;
    }
    numerics::validate(*o);
    log_info("computing the exact reference at {} bits and {} variants...",
             numerics::reference_precision(std::strtod(o->r.c_str(), nullptr), o->steps),
             o->variants.empty() ? std::string("all") : std::to_string(o->variants.size()));
    auto res = numerics::run_logmap(*o);

    NewRun nr;
    nr.experiment = *experiment;
    nr.name = *name;
    nr.command_line = ctx.argv_line;
    nr.config_text = fmt::format("x0: {}\nr: {}\nsteps: {}\n", o->x0, o->r, o->steps);
    auto rec = RunRecorder::start(ctx.store(), nr);
    rec->set_params({{"x0", o->x0},
                     {"r", o->r},
                     {"steps", std::to_string(o->steps)},
                     {"reference_precision_bits", std::to_string(res.reference_precision)}});
    rec->set_environment(manifest_here());
    for (size_t n = 0; n < res.reference.size(); ++n)
      rec->log_metric("x/reference", res.reference[n], static_cast<int64_t>(n));
    rec->log_metric("lyapunov", res.lyapunov, 0);
    rec->log_metric("predicted_digits_lost_per_step", res.predicted_digits_per_step, 0);
    for (const auto& v : res.variants) {
      for (size_t n = 0; n < v.x.size(); ++n) {
        rec->log_metric("x/" + v.variant.id, v.x[n], static_cast<int64_t>(n));
        rec->log_metric("digits/" + v.variant.id, v.correct_digits[n], static_cast<int64_t>(n));
      }
      for (size_t i = 0; i < o->thresholds.size(); ++i)
        rec->log_metric(fmt::format("first_over_{}/{}", format_double(o->thresholds[i]), v.variant.id),
                        static_cast<double>(v.first_over[i]), 0);
      rec->log_metric("digits_gone_step/" + v.variant.id, static_cast<double>(v.digits_gone), 0);
      rec->log_metric("digits_lost_per_step/" + v.variant.id, v.digits_lost_per_step, 0);
      rec->log_metric("lyapunov_predicted_per_step/" + v.variant.id, v.predicted_per_step, 0);
    }

    // Plots: the first 100 steps, and correct digits with the Lyapunov line.
    SvgChart first;
    first.title = fmt::format("Logistic map, x0 = {}, r = {}: first 100 steps", o->x0, o->r);
    first.x_label = "step n";
    first.y_label = "x(n)";
    size_t shown = std::min<size_t>(101, res.reference.size());
    auto steps_axis = [](size_t n) {
      std::vector<double> s(n);
      for (size_t i = 0; i < n; ++i) s[i] = static_cast<double>(i);
      return s;
    };
    first.series.push_back({"reference (MPFR)", steps_axis(shown),
                            {res.reference.begin(), res.reference.begin() + static_cast<long>(shown)},
                            true});
    for (const auto& v : res.variants)
      first.series.push_back({v.variant.id, steps_axis(shown),
                              {v.x.begin(), v.x.begin() + static_cast<long>(shown)}});
    SvgChart digits;
    digits.title = fmt::format("Correct significant digits (r = {}, Lyapunov {:.4f}/step)", o->r, res.lyapunov);
    digits.x_label = "step n";
    digits.y_label = "correct digits";
    size_t horizon = 0;
    for (const auto& v : res.variants)
      if (v.digits_gone > 0)
        horizon = std::max(horizon, static_cast<size_t>(v.digits_gone) + 20);
    horizon = std::min(std::max<size_t>(horizon, 50), res.reference.size());
    for (const auto& v : res.variants)
      digits.series.push_back({v.variant.id, steps_axis(horizon),
                               {v.correct_digits.begin(), v.correct_digits.begin() + static_cast<long>(horizon)}});
    for (double start : {15.95, 7.22}) {  // float64 and float32 initial digits
      std::vector<double> line(horizon);
      for (size_t n = 0; n < horizon; ++n)
        line[n] = std::max(0.0, start - res.predicted_digits_per_step * static_cast<double>(n));
      digits.series.push_back({fmt::format("Lyapunov, from {:.0f} digits", start), steps_axis(horizon), line, true});
    }
    emit_file(*rec, "trajectories.csv", "csv", trajectories_csv(res), *out_dir);
    emit_file(*rec, "logmap_first_100.svg", "plot", first.render(), *out_dir);
    emit_file(*rec, "logmap_correct_digits.svg", "plot", digits.render(), *out_dir);
    rec->end(RunStatus::kFinished);

    if (ctx.json) {
      nlohmann::json j = {{"run", rec->uuid()},
                          {"reference_precision_bits", res.reference_precision},
                          {"reference_final", res.reference.back()},
                          {"lyapunov", res.lyapunov},
                          {"predicted_digits_lost_per_step", res.predicted_digits_per_step}};
      for (const auto& v : res.variants) {
        nlohmann::json over = nlohmann::json::object();
        for (size_t i = 0; i < o->thresholds.size(); ++i)
          over[format_double(o->thresholds[i])] = v.first_over[i];
        j["variants"][v.variant.id] = {{"name", v.variant.name},
                                       {"x_final", json_number(v.x.back())},
                                       {"first_over", over},
                                       {"digits_gone_step", v.digits_gone},
                                       {"digits_lost_per_step", v.digits_lost_per_step},
                                       {"lyapunov_predicted_per_step", v.predicted_per_step},
                                       {"window", {v.window_from, v.window_to}}};
      }
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::vector<std::string> header = {"VARIANT", "x(N)"};
    for (double t : o->thresholds) header.push_back("FIRST >" + format_double(t));
    header.push_back("NO DIGIT AT");
    header.push_back("DIGITS LOST/STEP");
    header.push_back("LYAPUNOV PREDICTS");
    Table t(header);
    for (size_t c = 2; c < header.size(); ++c) t.align_right(c);
    t.add_row({"reference (MPFR, " + std::to_string(res.reference_precision) + " bits)",
               format_double(res.reference.back())});
    for (const auto& v : res.variants) {
      std::vector<std::string> row = {v.variant.id, fmt::format("{:.17g}", v.x.back())};
      for (auto s : v.first_over) row.push_back(s < 0 ? "never" : std::to_string(s));
      row.push_back(v.digits_gone < 0 ? "never" : std::to_string(v.digits_gone));
      row.push_back(v.window_from >= 0 ? fmt::format("{:.4f}", v.digits_lost_per_step) : "-");
      row.push_back(v.window_from >= 0
                        ? fmt::format("{:.4f} (steps {}-{})", v.predicted_per_step, v.window_from,
                                      v.window_to)
                        : "-");
      t.add_row(row);
    }
    t.print(std::cout);
    std::cout << fmt::format(
        "Lyapunov exponent over all {} steps {:.5f}: {:.4f} digits per step on average\n",
        o->steps,
        res.lyapunov, res.predicted_digits_per_step);
    std::cout << "recorded run " << rec->uuid() << " (plots and CSV as artifacts"
              << (out_dir->empty() ? "" : ", copies in " + *out_dir) << ")\n";
  });

  auto* sum = numerics->add_subcommand(
      "sum", "One float32 vector summed sequentially, pairwise, blocked per thread count, Kahan");
  auto n = std::make_shared<int64_t>(1'000'000);
  auto seed = std::make_shared<uint64_t>(42);
  sum->add_option("--n", *n, "Vector length");
  sum->add_option("--seed", *seed, "Seed of the values");
  set_example(sum, "trainscope numerics sum --n 1000000 --seed 42");
  sum->callback([&ctx, n, seed] {
    auto rep = numerics::run_sum(*n, *seed);
    NewRun nr;
    nr.experiment = "numerics";
    nr.name = "sum";
    nr.command_line = ctx.argv_line;
    auto rec = RunRecorder::start(ctx.store(), nr);
    rec->set_params({{"n", std::to_string(*n)}, {"seed", std::to_string(*seed)}});
    for (const auto& r : rep.results) {
      rec->log_metric("sum/" + r.method, r.value, 0);
      rec->log_metric("ulp_error/" + r.method, r.ulp_error, 0);
    }
    rec->end(RunStatus::kFinished);
    if (ctx.json) {
      nlohmann::json j = {{"run", rec->uuid()}, {"n", rep.n}, {"exact", rep.exact}};
      for (const auto& r : rep.results)
        j["results"].push_back({{"method", r.method}, {"value", r.value}, {"abs_error", r.abs_error},
                                {"ulp_error", r.ulp_error}});
      std::cout << j.dump(2) << "\n";
      return;
    }
    Table t({"METHOD", "FLOAT32 SUM", "ABS ERROR", "ERROR (ULP)"});
    for (size_t c = 1; c < 4; ++c) t.align_right(c);
    for (const auto& r : rep.results)
      t.add_row({r.method, fmt::format("{:.9g}", r.value), fmt::format("{:.3g}", r.abs_error),
                 fmt::format("{:.1f}", r.ulp_error)});
    std::cout << fmt::format("{} float32 values (seed {}), exact sum {:.17g}\n", rep.n, rep.seed,
                             rep.exact);
    t.print(std::cout);
    std::cout << "recorded run " << rec->uuid() << "\n";
  });
}

}  // namespace trainscope::cli
