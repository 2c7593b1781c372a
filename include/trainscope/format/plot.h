// Metric curves of one or more runs overlaid: what `trainscope plot` draws
// (and a web page would chart). One chart writer serves every plot:
// core::SvgChart.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "trainscope/store/store.h"

namespace trainscope::format {

// How metric_curves places and smooths the points, and how curves_svg
// draws them.
struct PlotOptions {
  std::string x = "step";  // step | epoch | time (seconds since the run started)
  // Exponential moving average with TensorBoard's weight and debiasing:
  // s_k = w s_{k-1} + (1 - w) v_k, divided by 1 - w^k. 0: raw values.
  double smooth = 0;
  bool log_y = false;
};

// One (run, key) series on the chosen x axis: its raw values and, with
// smoothing, the smoothed ones (else empty).
struct Curve {
  std::string run, run_name, key;
  std::vector<double> x, y, smoothed;
};

// One curve per (run, key) that has points, on the x axes of format/axes.h:
// with x "step" an epoch metric (test/accuracy, ...) sits at the step its
// epoch ended, with x "epoch" a step metric at its fractional epoch. A key
// no run recorded that names a chart ("loss", "accuracy") stands for the
// learning curves sharing it (train/loss and test/loss overlaid); bookkeeping
// series are drawn only when named. Throws Error(kNotFound) naming the first
// key no run has (or a run without epochs for x "epoch"), or kUsage for an
// unknown x or a smoothing weight outside [0, 1).
std::vector<Curve> metric_curves(store::Store& store, const std::vector<store::RunInfo>& runs,
                                 const std::vector<std::string>& keys, const PlotOptions& options);
// One SVG chart of every curve (with smoothing, the raw curve dashed
// beside the smoothed one), titled by the keys. Pure.
std::string curves_svg(const std::vector<Curve>& curves, const PlotOptions& options);
// Long format: run,name,key,x,value,smoothed.
void curves_csv(std::ostream& out, const std::vector<Curve>& curves);
// JSON: {"x": axis, "curves": [{run, name, key, x, value, smoothed}]},
// values as format::number writes them ("nan", "inf"), an x that is no
// time (a damaged store's start or point time) null.
void curves_json(std::ostream& out, const std::vector<Curve>& curves, const PlotOptions& options);

}  // namespace trainscope::format
