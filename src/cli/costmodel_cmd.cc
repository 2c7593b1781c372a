// `trainscope costmodel fit` and `costmodel eval`: they read recorded
// profiles and fit or test the cost model, all without libtorch
// (`costmodel predict` builds a model: the torch half, torch/costmodel.cc).
#include <iostream>
#include <set>

#include "commands.h"
#include "output.h"
#include "torch_commands.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"
#include "trainscope/env/manifest.h"
#include "trainscope/format/format.h"
#include "trainscope/profile/costmodel.h"
#include "trainscope/profile/json.h"

namespace trainscope::cli {

namespace {

core::SvgChart eval_chart(const profile::CostModelEval& e) {
  core::SvgChart c;
  c.title = fmt::format("Cost model, leave one architecture out: MAPE {:.1f}% per iteration",
                        e.iteration_mape);
  c.x_label = "measured ms per iteration";
  c.y_label = "predicted ms";
  c.log_x = c.log_y = true;
  double lo = 1e300, hi = 0;
  std::map<std::string, core::SvgSeries> by_model;
  for (const auto& r : e.rows) {
    auto& s = by_model[r.model];
    s.name = r.model;
    s.points = true;
    s.x.push_back(r.measured_us / 1000);
    s.y.push_back(r.predicted_us / 1000);
    lo = std::min({lo, r.measured_us / 1000, r.predicted_us / 1000});
    hi = std::max({hi, r.measured_us / 1000, r.predicted_us / 1000});
  }
  for (auto& [m, s] : by_model) c.series.push_back(std::move(s));
  c.series.push_back({"exact", {lo, hi}, {lo, hi}, true, false});
  c.series.push_back({"-15%", {lo, hi}, {lo * 0.85, hi * 0.85}, true, false});
  c.series.push_back({"+15%", {lo, hi}, {lo * 1.15, hi * 1.15}, true, false});
  return c;
}

std::string error_pct(double predicted, double measured) {
  return fmt::format("{:+.1f}%", (predicted / measured - 1) * 100);
}

void print_eval(const profile::CostModelEval& e, const std::vector<profile::ProfiledArch>& data,
                bool with_layers) {
  Table t({"HELD-OUT MODEL", "BATCH", "MEASURED ms", "PREDICTED ms", "ERROR"});
  for (size_t c = 1; c < 5; ++c) t.align_right(c);
  for (const auto& r : e.rows)
    t.add_row({r.model, std::to_string(r.batch), fmt::format("{:.2f}", r.measured_us / 1000),
               fmt::format("{:.2f}", r.predicted_us / 1000),
               error_pct(r.predicted_us, r.measured_us)});
  t.print(std::cout);
  if (with_layers) {
    Table lt({"HELD-OUT MODEL", "BATCH", "LAYER", "TYPE", "MEASURED us", "PREDICTED us", "ERROR"});
    for (size_t c : {1, 4, 5, 6}) lt.align_right(c);
    for (const auto& r : e.layer_rows)
      lt.add_row({r.model, std::to_string(r.batch), r.layer, r.type,
                  fmt::format("{:.1f}", r.measured_us), fmt::format("{:.1f}", r.predicted_us),
                  error_pct(r.predicted_us, r.measured_us)});
    std::cout << "\n";
    lt.print(std::cout);
  }
  std::set<std::string> archs;
  std::set<int64_t> batches;
  for (const auto& a : data) archs.insert(a.model), batches.insert(a.batch);
  std::cout << fmt::format(
      "leave-one-architecture-out MAPE over {} architectures x {} batch sizes: per iteration "
      "{:.1f}%, per layer {:.1f}% ({} layers taking >= 1% of their iteration)\n",
      archs.size(), batches.size(), e.iteration_mape, e.layer_mape, e.layer_rows.size());
}

}  // namespace

void costmodel_fit(Context& ctx, const CostmodelArgs& a) {
  auto data = profile::load_profiled(*ctx.reader(), a.runs);
  auto m = profile::fit(data, env::simd_float_lanes());
  write_output(a.model_file, [&](std::ostream& o) { o << m.to_json() << "\n"; });
  std::set<std::string> archs;
  size_t n_runs = 0;
  for (const auto& d : data) {
    archs.insert(d.model);
    n_runs += d.runs.size();
  }
  std::cout << fmt::format(
      "fitted {} layer types on {} layers of {} runs ({} configurations, {} architectures, "
      "{}-float vectors); wrote {}\n",
      m.coef.size(), m.samples, n_runs, data.size(), archs.size(), m.lanes,
      core::escape_for_display(a.model_file));
}

void costmodel_eval(Context& ctx, const CostmodelArgs& a) {
  auto data = profile::load_profiled(*ctx.reader(), a.runs);
  auto e = profile::leave_one_architecture_out(data, env::simd_float_lanes());
  if (!a.svg.empty()) write_output(a.svg, [&](std::ostream& o) { o << eval_chart(e).render(); });
  if (ctx.json || a.format == "json") {
    std::cout << profile::costmodel_eval_json(e).dump(2, ' ', false, format::kInvalidUtf8) << "\n";
  } else if (a.format == "csv") {
    profile::costmodel_eval_csv(std::cout, e);
  } else {
    print_eval(e, data, a.layers);
  }
}

}  // namespace trainscope::cli
