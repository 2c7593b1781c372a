// `trainscope numerics ...`: the floating-point lab.
#include <iostream>

#include "context.h"
#include "output.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/numerics/logmap.h"
#include "trainscope/store/run_recorder.h"

namespace trainscope::cli {

void register_numerics_commands(CLI::App& app, Context& ctx) {
  auto* numerics = app.add_subcommand("numerics", "Floating-point lab");
  numerics->require_subcommand(1);
  set_example(numerics, "trainscope numerics logmap --r 3.7 --steps 2000");

  auto* cmd = numerics->add_subcommand(
      "logmap", "Logistic map x(n+1) = r*x(n)*(1-x(n)) in float32, float64 and long double");
  auto o = std::make_shared<numerics::LogmapOptions>();
  auto name = std::make_shared<std::string>("logmap");
  auto experiment = std::make_shared<std::string>("numerics");
  cmd->add_option("--x0", o->x0, "Start value in [0, 1]");
  cmd->add_option("--r", o->r, "Parameter in (0, 4]");
  cmd->add_option("--steps", o->steps, "Number of iterations");
  cmd->add_option("--name", *name, "Run name");
  cmd->add_option("--experiment", *experiment, "Experiment to record into");
  set_example(cmd, "trainscope numerics logmap --x0 0.4 --r 3.7 --steps 2000");
  cmd->callback([&ctx, o, name, experiment] {
    numerics::validate(*o);
    auto trajectories = numerics::logmap_basic(*o);
    NewRun nr;
    nr.experiment = *experiment;
    nr.name = *name;
    nr.command_line = ctx.argv_line;
    nr.config_text = fmt::format("x0: {}\nr: {}\nsteps: {}\n", format_double(o->x0),
                                 format_double(o->r), o->steps);
    auto rec = RunRecorder::start(ctx.store(), nr);
    rec->log_params({{"x0", format_double(o->x0)},
                     {"r", format_double(o->r)},
                     {"steps", std::to_string(o->steps)}});
    const auto& ref = trajectories.back().x;  // long double as the reference here
    for (const auto& t : trajectories) {
      for (size_t n = 0; n < t.x.size(); ++n) {
        rec->log_metric("x/" + t.variant, t.x[n], static_cast<int64_t>(n));
        rec->log_metric("abs_err_vs_long_double/" + t.variant, std::fabs(t.x[n] - ref[n]),
                        static_cast<int64_t>(n));
      }
    }
    Table table({"VARIANT", "x(N)", "FIRST |dx|>1e-3 vs long double"});
    table.align_right(2);
    std::vector<int64_t> divergence;
    for (const auto& t : trajectories) {
      int64_t d = numerics::first_divergence(t.x, ref, 1e-3);
      divergence.push_back(d);
      rec->log_metric("first_divergence_1e-3/" + t.variant, static_cast<double>(d), 0);
      table.add_row({t.variant, format_double(t.x.back()), d < 0 ? "never" : std::to_string(d)});
    }
    rec->end(RunStatus::kFinished);
    if (ctx.json) {
      nlohmann::json j = {{"run", rec->uuid()}};
      for (size_t i = 0; i < trajectories.size(); ++i)
        j["variants"][trajectories[i].variant] = {{"x_final", trajectories[i].x.back()},
                                                  {"first_divergence_1e-3", divergence[i]}};
      std::cout << j.dump(2) << "\n";
    } else {
      table.print(std::cout);
      std::cout << "recorded run " << rec->uuid() << "\n";
    }
  });
}

}  // namespace trainscope::cli
