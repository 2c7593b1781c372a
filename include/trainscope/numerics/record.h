// Recording the floating-point lab's results as runs: params, metrics,
// CSV and SVG artifacts. Torch-free; the CLI prints, this records.
#pragma once

#include <memory>
#include <string>

#include "trainscope/core/svg.h"
#include "trainscope/env/manifest.h"
#include "trainscope/numerics/logmap.h"
#include "trainscope/store/store.h"

namespace trainscope::numerics {

// How record_logmap and record_sum name and record their run.
struct RecordOptions {
  std::string name;
  std::string experiment = "numerics";
  std::string command_line;
  std::string out_dir;        // also write the files here when set
  env::Manifest environment;  // recorded with the run
};

// Records a logistic-map result: params (x0, r, steps, reference bits),
// x/<variant> and digits/<variant> per step, summary metrics per variant,
// and trajectories.csv, logmap_first_100.svg and logmap_correct_digits.svg
// as artifacts. Returns the run's UUID.
std::string record_logmap(std::shared_ptr<store::Store> store, const LogmapOptions& options,
                          const LogmapResult& result, const RecordOptions& record);

// step, reference, each variant's x, then each variant's correct digits.
std::string trajectories_csv(const LogmapResult& result);
// x(n) of the reference and every variant over the first 100 steps.
core::SvgChart first_steps_chart(const LogmapOptions& options, const LogmapResult& result);
// Correct significant digits per variant, with the Lyapunov prediction.
core::SvgChart correct_digits_chart(const LogmapOptions& options, const LogmapResult& result);

// Records a summation report: sum/<method> and ulp_error/<method>.
std::string record_sum(std::shared_ptr<store::Store> store, const SumReport& report,
                       const RecordOptions& record);

}  // namespace trainscope::numerics
