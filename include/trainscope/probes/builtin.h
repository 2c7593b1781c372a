// The probe settings of a run, the presets, and the built-in subscribers.
//
// Presets (config `probes: economy | standard | full`; measured cost in
// docs/probes.md):
//   economy   every 10th step: L2 and max norms of weights and weight
//             gradients, update-to-weight ratio, loss and train accuracy,
//             the alert rules, NaN/Inf origin.
//   standard  economy + histograms of weights and weight gradients,
//             activation statistics (mean, SD, zeros, dead units,
//             saturation), bias norms, spectral norm of weights.
//   full      every step: every kind's norms and histograms (activations
//             and layer gradients: their norms only here); every 50th step the SVCCA
//             similarity of each layer's representation of a fixed batch
//             with the one 50 steps before.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "trainscope/probes/probes.h"

namespace trainscope::probes {

// The thresholds of the alert rules (alert_rules); what the probes
// section's alert_* keys set.
struct AlertSettings {
  int patience = 3;                 // K: consecutive observations before an alert
  double update_ratio_high = 0.3;   // above: learning rate too high
  double update_ratio_low = 1e-7;   // below: learning rate too low
  double dead_fraction = 0.5;       // dead ReLU units above this fraction
  double saturated_fraction = 0.5;  // saturated tanh/sigmoid outputs above this fraction
  int loss_window = 20;             // observations per window of the loss rules
  double grad_depth_ratio = 1e4;    // first/last layer gradient norm outside [1/r, r]
  // Overfitting: for `patience` evaluations, the test loss 10% above its best
  // while the training loss fell since, or the test accuracy this far below
  // its best while the training accuracy rose since.
  double overfit_drop = 0.02;
};

// What probe_settings reads from a config (probes/config.h), checked
// there; a plain value.
struct ProbeSettings {
  std::string preset = "off";      // off | economy | standard | full
  int64_t every = 0;               // 0: the preset's (10, or 1 for full)
  std::string layers = "*";        // glob over layer names ("features.*")
  std::vector<std::string> types;  // module types to keep ("Conv2d"); empty: all
  int max_depth = 0;               // 0: any depth
  std::set<Kind> kinds;            // restricts the preset's kinds; empty: all of them
  int histogram_bins = 64;
  int64_t activation_samples = 32;  // examples of a batch whose activations are copied (0: all)
  int64_t test_every = 0;           // test accuracy on a subset every N steps (0: off)
  int workers = 1;
  size_t queue_capacity = 64;
  bool block_when_full = true;
  bool tensorboard = true;
  AlertSettings alerts;

  // Whether a preset is chosen (preset != "off").
  bool enabled() const { return preset != "off"; }
  int64_t period() const;  // every, or the preset's
};

const std::vector<std::string>& preset_names();  // off, economy, standard, full
// Throws Error(kUsage) listing the presets.
void check_preset(const std::string& name);

// The preset's subscribers (and alert rules), with settings applied.
std::vector<std::shared_ptr<Subscriber>> builtin_subscribers(const ProbeSettings& settings);

// Shell-style glob: '*' any run of characters, '?' one character.
bool glob_match(const std::string& pattern, const std::string& text);
// Whether a layer passes the settings' filter.
bool layer_selected(const ProbeSettings& settings, const LayerInfo& layer);

// Building blocks, for users composing their own set.
std::shared_ptr<Subscriber> norms_subscriber(std::set<Kind> kinds, int64_t every = 0);
// |weight update| / |weights before it| per layer, as
// "weights/update_ratio" (also at each of the first 10 steps).
std::shared_ptr<Subscriber> update_ratio_subscriber(int64_t every = 0);
// The largest singular value of each layer's weights seen as [out, rest]
// (power iteration warm-started per layer), as "weights/spectral_norm".
std::shared_ptr<Subscriber> spectral_norm_subscriber(int64_t every = 0);
// A histogram of `bins` bins of each of `kinds` of each layer.
std::shared_ptr<Subscriber> histogram_subscriber(std::set<Kind> kinds, int bins, int64_t every = 0);
// Mean, SD and zero fraction of each layer's activations; the dead-unit
// fraction of ReLU layers, the saturated fraction of Tanh and Sigmoid.
std::shared_ptr<Subscriber> activation_stats_subscriber(int64_t every = 0);
// Loss and train accuracy averaged over the batches between publications,
// published at every `every`th step; test accuracy of each evaluation.
std::shared_ptr<Subscriber> training_subscriber(int64_t every);
// The alert rules (a series subscriber): learning rate too high or low,
// dead units, exploding or vanishing gradients, loss rising or flat,
// overfitting; each raised after `patience` consecutive observations.
std::shared_ptr<Subscriber> alert_rules(const AlertSettings& settings);
// SVCCA similarity of a layer's reference activations (conv channels
// averaged over space) with those at its previous call.
std::shared_ptr<Subscriber> svcca_subscriber(int64_t every);

// SVCCA (Raghu et al. 2017) of two views X (n x dx) and Y (n x dy) of the
// same n inputs, row-major: each centred and cut to the directions holding
// `keep` of its variance, then the mean canonical correlation of the two.
double svcca(const std::vector<double>& x, int dx, const std::vector<double>& y, int dy, int n,
             double keep = 0.99);

}  // namespace trainscope::probes
