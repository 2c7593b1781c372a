// Reading probes back from the store: series by layer and kind, alerts,
// histograms, and their plots. What `trainscope probes` prints and what a
// web server would serve.
#pragma once

#include <string>
#include <vector>

#include "trainscope/probes/records.h"
#include "trainscope/store/store.h"

namespace trainscope::probes {

// Which series probe_series returns; each part "" (or "*" for the layer)
// takes everything.
struct ProbeFilter {
  std::string layer = "*";  // glob over layer names ("" or "*": all)
  std::string kind;         // a kind ("weights") or a whole-network series ("loss"); "": all
  std::string stat;         // "update_ratio", "l2", ...; "": all
};

// One recorded probe series, parsed from its metric key.
struct SeriesRef {
  std::string key;    // "probe/features.conv1/weights/l2"
  std::string layer;  // "" for whole-network series
  std::string kind;   // "weights", or the series name ("loss") for whole-network ones
  std::string stat;   // "l2"; "" for whole-network series
  store::MetricSummary summary;
};

// The run's probe series passing the filter, by key. Throws Error(kNotFound)
// when the run has no probes at all, or when the filter names a layer or a
// kind the run does not have (listing those it has).
std::vector<SeriesRef> probe_series(store::Store& store, const std::string& uuid,
                                    const ProbeFilter& filter = {});

// The run's alerts (run events of kind "alert").
std::vector<RunEvent> probe_alerts(store::Store& store, const std::string& uuid);

// Line chart of one stat over steps, one line per layer (log y for ratios
// and norms).
std::string series_svg(store::Store& store, const std::string& uuid,
                       const std::vector<SeriesRef>& series, const std::string& title);

// Heat map of one histogram key over steps: x step, y value, colour the
// share of the step's values in the bin.
std::string histogram_heatmap_svg(const std::vector<StepHistogram>& histograms,
                                  const std::string& title);

}  // namespace trainscope::probes
