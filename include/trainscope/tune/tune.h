// A short measured search over the settings that change training speed on
// this machine: thread count, memory format, oneDNN, and batch size where the
// user allows it. Every setting trains a few hundred steps in a process of
// its own (so that its peak memory is its own), settings interleaved round
// after round; the step time is the median of `train/step_ms` after a
// warm-up. The first steps' fingerprints say whether a setting also changes
// the numbers, and the profiler says which layers gain or lose.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainscope::tune {

// One setting: the config overrides that make it.
struct Setting {
  std::string label;                   // "threads=1", "channels_last", ...
  std::vector<std::string> overrides;  // "compute.threads=1", ...
  bool changes_batch = false;          // another batch size: another training
  int64_t batch_size = 0;              // its batch size (0: the baseline's)
};

// What the candidates are built around: the config's values as resolved here.
struct Baseline {
  int threads = 1;      // compute threads the config resolves to
  int max_threads = 1;  // the physical cores available
  std::string memory_format = "contiguous";
  bool mkldnn = true;
  int64_t batch_size = 128;
  std::vector<double> batch_multiples;  // e.g. {0.5, 2}; empty: batch size fixed
};

// The baseline itself (no override) first, then one factor changed at a
// time: every thread count from 1 to max_threads (at most 4 of them), the
// other memory format, oneDNN switched, each allowed batch multiple.
std::vector<Setting> candidate_settings(const Baseline& b);

// What run_tune() tries: each setting as trials of `steps` steps run as child
// processes of `executable`, `rounds` times; `progress` is called on the
// calling thread.
struct TuneOptions {
  std::string executable;              // a trainscope executable for the trials
  std::string config;                  // the config file
  std::vector<std::string> overrides;  // the user's own --set values
  std::vector<Setting> settings;       // settings[0] is the baseline
  int64_t batch_size = 128;            // the baseline's, for samples/s
  int64_t steps = 150;                 // per trial
  int rounds = 3;
  bool profile_layers = true;  // profile the baseline and the fastest
  // Called before each trial (1-based) with its setting's label.
  std::function<void(int trial, int trials, const std::string& label)> progress;
};

// One setting's measured trials and how it compares with the baseline.
struct SettingResult {
  Setting setting;
  std::vector<double> step_ms;  // one median per trial
  std::vector<double> rss_mib;  // peak RSS per trial
  double median_step_ms = 0;
  double samples_per_s = 0;
  double peak_rss_mib = 0;  // the largest of its trials
  double speedup = 1;       // samples/s relative to the baseline
  // Against the baseline's first trial (the baseline: against its own
  // second trial): "same bits for the first N steps", "differs from step
  // K", "another batch size: another training".
  std::string numerics;
  bool same_numbers = true;
};

// A layer's forward + backward + update time, baseline vs fastest.
struct LayerChange {
  std::string layer, type;
  double baseline_us = 0, best_us = 0;
};

// What run_tune() returns: a plain value.
struct TuneReport {
  std::vector<SettingResult> results;  // in the order of the settings
  size_t best = 0;                     // index of the most samples/s
  std::vector<LayerChange> layers;     // top layers of the baseline, when the fastest is another
  double seconds = 0;
};

// Runs the search. Throws core::Error naming the setting when a trial
// fails (its stderr's last line included).
TuneReport run_tune(const TuneOptions& options);

}  // namespace trainscope::tune
