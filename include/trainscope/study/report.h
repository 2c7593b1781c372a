// What a study's runs say: per cell the spread of the result with bootstrap
// intervals, cross-run measures on the test predictions (disagreement,
// logit correlation, ensemble gain), the bit-identity audit of cells that
// should repeat exactly, each source's share of the variance, cost (time,
// energy, CO2); the spread over training time, each pair of cells compared
// (P(A > B), the mean difference, the runs a test needs) and a grid's
// variance components per factor; and the report that shows it (HTML with
// SVG, Markdown).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainscope/stats/compare.h"
#include "trainscope/stats/factors.h"
#include "trainscope/stats/runs.h"
#include "trainscope/store/store.h"
#include "trainscope/study/spec.h"

namespace trainscope::predictions {
struct Predictions;
}  // namespace trainscope::predictions

namespace trainscope::study {

// Agreement of the test predictions of runs (each pair of runs, averaged).
struct CrossRun {
  int runs = 0;                  // runs with predictions
  double disagreement = 0;       // mean fraction of examples two runs classify differently
  double logit_correlation = 0;  // mean Pearson correlation of the top logits
  double mean_accuracy = 0;      // of the members
  double ensemble_accuracy = 0;  // majority vote (ties: the larger top logit)
};

// Pairwise measures over runs' predictions; nullopt for fewer than 2 runs.
std::optional<CrossRun> cross_run(const std::vector<predictions::Predictions>& runs);

// Whether a cell that varies nothing reproduced bit for bit: how many
// replicates were compared with the first, and the first that differed.
struct Audit {
  bool identical = true;  // every replicate bit-identical to the first
  int compared = 0;
  std::string first_differing_run;  // name
  int64_t first_diff_step = -1;     // from repro::diff_runs
  std::string note;
};

// The spread of a cell's runs at one epoch: the runs that recorded the
// study's metric at that step (the trainer logs test metrics once per epoch,
// at step = epoch; a repeated step counts its last value).
struct EpochSpread {
  int64_t epoch = 0;
  std::vector<double> values;  // one per run, in the cell's run order
  double mean = 0;
  std::optional<double> sd;              // ddof 1; unset for fewer than 2 runs
  std::optional<stats::Interval> sd_ci;  // bootstrap_sd_ci; unset when constant
  std::optional<double> sd_ratio;        // SD / SD of the "all" source there (sources mode)
};

// One cell of a study: its finished runs' results, cost and, where they
// apply, cross-run measures, audit and comparison with a deterministic
// twin. Part of StudyAnalysis, a plain value.
struct CellAnalysis {
  std::string cell, vary;
  int runs = 0;
  stats::GroupStats result;        // of the study's metric, ddof 1
  std::optional<double> sd_ratio;  // SD / SD of the "all" source (sources mode)
  std::optional<CrossRun> cross;
  std::optional<Audit> audit;  // cells that vary nothing
  // Means over its finished runs (a series: over those that recorded it, a
  // run lacking it is not a 0); NaN or none (`-`, null) when there are none.
  double mean_run_s = 0;  // wall time per run
  double mean_samples_per_s = 0, mean_epoch_s = 0;
  std::optional<double> mean_time_to_target_s;
  std::optional<double> mean_epochs_to_target;
  double energy_kwh = 0;                                             // summed over its runs
  std::vector<std::pair<std::string, std::vector<double>>> factors;  // (key, value) of grid cells
  std::vector<double> values;          // the metric per run, for strip plots
  std::vector<std::string> run_uuids;  // its finished runs
  std::vector<EpochSpread> epochs;     // the metric's spread over training, by epoch
  std::vector<std::pair<std::string, std::string>> levels;  // (key, value) of grid cells
  // Grid cells with an exact-repeat twin (deterministic: true), BRIEF §2:
  // Diff% = (deterministic - mean) / mean * 100, and the one-sample t-test
  // of this cell's runs against the deterministic value.
  std::optional<double> deterministic_value, diff_percent_vs_deterministic;
  std::optional<stats::TestResult> t_vs_deterministic;
};

// How far apart the weights of a cell's runs are at one checkpoint step
// (BRIEF §2): the element-wise SD across runs (ddof 1), averaged over the
// layer's elements, and the cosine similarity of each pair of runs' weight
// vectors. Layer "(all)" is every parameter together.
struct WeightSpread {
  std::string cell;
  int64_t step = 0;
  std::string layer;
  int runs = 0;
  double mean_sd = 0;
  double cos_min = 0, cos_mean = 0, cos_max = 0;
  bool last_layer = false;
};

// Two cells compared on their runs' final values (stats::compare).
struct CellPair {
  std::string a, b;
  stats::PairComparison result;
};

// Past this many cells, each cell is compared with the first (the
// reference) instead of every pair with every other.
inline constexpr size_t kMaxAllPairsCells = 12;

// One run's series (a loss curve) for the report's plots.
struct Curve {
  std::string cell, run;
  std::vector<double> x, y;
};

// What analyse_study returns: a plain value for the reports and the JSON
// output.
struct StudyAnalysis {
  store::RunInfo study;
  store::Liveness liveness;  // of the study's own run, as readers show it
  StudySpec spec;
  std::string metric = "test/accuracy";
  std::vector<CellAnalysis> cells;
  std::optional<stats::Comparison> comparison;  // across cells
  // Pairs of cells (a grid's varied cells, or every source), each once;
  // `pairs_reference` names the cell all others were compared with when
  // there were more than kMaxAllPairsCells (empty: every pair).
  std::vector<CellPair> pairs;
  std::string pairs_reference;
  int pairs_cells = 0;  // cells that took part
  // Grids of two or more factors: the variance of the result by factor
  // (every factor random, interactions when cells hold replicates), over
  // the varied cells' runs; unset otherwise (factor_notes says why).
  std::optional<stats::FactorAnalysis> factor_components;
  std::vector<std::string> factor_notes;
  std::vector<Curve> loss_curves;  // train/loss per run
  double energy_kwh = 0, co2_kg = 0, carbon_kg_per_kwh = 0;
  std::optional<double> determinism_cost;  // mean run time, deterministic / varied cells
  // Filled by weight_spread (study/weights.h: libtorch reads the
  // checkpoints); empty if not.
  std::vector<WeightSpread> weights;
  int planned = 0, finished = 0;
  std::vector<std::string> notes;
};

// The analysis of the study `ref` names (resolve_study: a reference that is
// not a study throws Error(kUsage)), over its finished runs; missing runs
// are noted, not errors. Reads the store only; `weights` is left empty.
StudyAnalysis analyse_study(store::Store& store, const std::string& ref,
                            const std::string& metric = "test/accuracy");

// One self-contained HTML file (no network): tables and inline SVG plots.
std::string html_report(const StudyAnalysis& a);
// The same as Markdown. Both are pure functions of `a`.
std::string markdown_report(const StudyAnalysis& a);

}  // namespace trainscope::study
