#include "trainscope/numerics/record.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "trainscope/core/util.h"
#include "trainscope/instrument/run_identity.h"
#include "trainscope/store/run_recorder.h"

namespace fs = std::filesystem;

namespace trainscope::numerics {
using core::format_double;

namespace {

std::unique_ptr<store::RunRecorder> start_run(std::shared_ptr<store::Store> store,
                                              const RecordOptions& r, std::string config_text) {
  instrument::RunIdentity id;  // as given: the environment names no numerics run
  id.experiment = r.experiment;
  id.name = r.name;
  id.command_line = r.command_line;
  id.config_text = std::move(config_text);
  return instrument::start_run(std::move(store), id);
}

// Records `content` as an artifact and, when out_dir is set, copies it there.
void emit_file(store::RunRecorder& run, const std::string& name, const std::string& kind,
               const std::string& content, const std::string& out_dir) {
  fs::path tmp =
      fs::temp_directory_path() / ("trainscope-" + core::new_uuid().substr(0, 8) + "-" + name);
  std::ofstream(tmp, std::ios::binary) << content;
  run.add_artifact(tmp, kind, name);
  if (!out_dir.empty()) {
    fs::create_directories(out_dir);
    fs::copy_file(tmp, fs::path(out_dir) / name, fs::copy_options::overwrite_existing);
  }
  fs::remove(tmp);
}

std::vector<double> steps_axis(size_t n) {
  std::vector<double> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<double>(i);
  return s;
}

void log_variant(store::RunRecorder& run, const LogmapOptions& o, const VariantResult& v) {
  const std::string& id = v.variant.id;
  for (size_t n = 0; n < v.x.size(); ++n) {
    run.log_metric("x/" + id, v.x[n], static_cast<int64_t>(n));
    run.log_metric("digits/" + id, v.correct_digits[n], static_cast<int64_t>(n));
  }
  // A step never reached is no point (it was -1, which stats averaged as
  // a step; twenty-eighth hunt, A-D3).
  for (size_t i = 0; i < o.thresholds.size(); ++i)
    if (v.first_over[i] >= 0)
      run.log_metric(fmt::format("first_over_{}/{}", format_double(o.thresholds[i]), id),
                     static_cast<double>(v.first_over[i]), 0);
  if (v.digits_gone >= 0)
    run.log_metric("digits_gone_step/" + id, static_cast<double>(v.digits_gone), 0);
  run.log_metric("digits_lost_per_step/" + id, v.digits_lost_per_step, 0);
  run.log_metric("lyapunov_predicted_per_step/" + id, v.predicted_per_step, 0);
}

}  // namespace

std::string trajectories_csv(const LogmapResult& res) {
  std::string out = "step,reference";
  for (const auto& v : res.variants) out += "," + core::csv_field(v.variant.id);
  for (const auto& v : res.variants) out += "," + core::csv_field("digits:" + v.variant.id);
  out += "\n";
  for (size_t n = 0; n < res.reference.size(); ++n) {
    out += std::to_string(n) + "," + format_double(res.reference[n]);
    for (const auto& v : res.variants) out += "," + format_double(v.x[n]);
    for (const auto& v : res.variants) out += "," + fmt::format("{:.3f}", v.correct_digits[n]);
    out += "\n";
  }
  return out;
}

core::SvgChart first_steps_chart(const LogmapOptions& o, const LogmapResult& res) {
  core::SvgChart c;
  c.title = fmt::format("Logistic map, x0 = {}, r = {}: first 100 steps", o.x0, o.r);
  c.x_label = "step n";
  c.y_label = "x(n)";
  const size_t shown = std::min<size_t>(101, res.reference.size());
  const auto end = static_cast<long>(shown);
  c.series.push_back({"reference (MPFR)",
                      steps_axis(shown),
                      {res.reference.begin(), res.reference.begin() + end},
                      true});
  for (const auto& v : res.variants)
    c.series.push_back({v.variant.id, steps_axis(shown), {v.x.begin(), v.x.begin() + end}});
  return c;
}

core::SvgChart correct_digits_chart(const LogmapOptions& o, const LogmapResult& res) {
  core::SvgChart c;
  c.title =
      fmt::format("Correct significant digits (r = {}, Lyapunov {:.4f}/step)", o.r, res.lyapunov);
  c.x_label = "step n";
  c.y_label = "correct digits";
  size_t horizon = 0;
  for (const auto& v : res.variants)
    if (v.digits_gone > 0) horizon = std::max(horizon, static_cast<size_t>(v.digits_gone) + 20);
  horizon = std::min(std::max<size_t>(horizon, 50), res.reference.size());
  const auto end = static_cast<long>(horizon);
  for (const auto& v : res.variants)
    c.series.push_back({v.variant.id,
                        steps_axis(horizon),
                        {v.correct_digits.begin(), v.correct_digits.begin() + end}});
  for (double start : {15.95, 7.22}) {  // float64 and float32 initial digits
    std::vector<double> line(horizon);
    for (size_t n = 0; n < horizon; ++n)
      line[n] = std::max(0.0, start - res.predicted_digits_per_step * static_cast<double>(n));
    c.series.push_back(
        {fmt::format("Lyapunov, from {:.0f} digits", start), steps_axis(horizon), line, true});
  }
  return c;
}

std::string record_logmap(std::shared_ptr<store::Store> store, const LogmapOptions& o,
                          const LogmapResult& res, const RecordOptions& r) {
  auto run =
      start_run(std::move(store), r, fmt::format("x0: {}\nr: {}\nsteps: {}\n", o.x0, o.r, o.steps));
  run->set_params({{"x0", o.x0},
                   {"r", o.r},
                   {"steps", std::to_string(o.steps)},
                   {"reference_precision_bits", std::to_string(res.reference_precision)}});
  run->set_environment(r.environment);
  for (size_t n = 0; n < res.reference.size(); ++n)
    run->log_metric("x/reference", res.reference[n], static_cast<int64_t>(n));
  run->log_metric("lyapunov", res.lyapunov, 0);
  run->log_metric("predicted_digits_lost_per_step", res.predicted_digits_per_step, 0);
  for (const auto& v : res.variants) log_variant(*run, o, v);
  emit_file(*run, "trajectories.csv", "csv", trajectories_csv(res), r.out_dir);
  emit_file(*run, "logmap_first_100.svg", "plot", first_steps_chart(o, res).render(), r.out_dir);
  emit_file(*run, "logmap_correct_digits.svg", "plot", correct_digits_chart(o, res).render(),
            r.out_dir);
  run->end(store::RunStatus::kFinished);
  return run->uuid();
}

std::string record_sum(std::shared_ptr<store::Store> store, const SumReport& rep,
                       const RecordOptions& r) {
  auto run = start_run(std::move(store), r, "");
  run->set_params({{"n", std::to_string(rep.n)}, {"seed", std::to_string(rep.seed)}});
  for (const auto& x : rep.results) {
    run->log_metric("sum/" + x.method, x.value, 0);
    run->log_metric("ulp_error/" + x.method, x.ulp_error, 0);
  }
  run->end(store::RunStatus::kFinished);
  return run->uuid();
}

}  // namespace trainscope::numerics
