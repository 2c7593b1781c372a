// Probes: per-layer training signals published to subscribers while a
// network trains, computed off the training thread.
//
// The training side (train/observers/probes.cc) copies what is due at a step
// into Buffers and hands them to a Hub; the Hub's workers call the
// Subscribers, which publish scalar series, histograms and alerts into a
// Sink. Published scalars are series that other subscribers may subscribe
// to (alert rules are such subscribers). Everything here is torch-free: a
// subscriber sees float32 copies, never the model's tensors.
//
// Delivery: one LayerPacket holds every kind of one layer at one step
// (synchronised delivery). Packets of one layer reach subscribers in step
// order on one worker; packets of different layers may be processed at the
// same time on different workers, so a subscriber with per-layer state must
// guard it (the built-in ones key their state by layer under a mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace trainscope::probes {

// Per-layer kinds. Updates are the change an optimizer step made
// (new - old parameters); layer gradients are d loss / d layer output;
// reference activations are a layer's output on a fixed batch (the first
// 256 test examples, eval mode), the same inputs at every step so that
// representations can be compared across steps (SVCCA).
enum class Kind {
  kActivations,
  kLayerGradients,
  kWeights,
  kWeightGradients,
  kWeightUpdates,
  kBiases,
  kBiasGradients,
  kBiasUpdates,
  kReferenceActivations,
};
const char* to_string(Kind k);  // "activations", "layer_gradients", "weights", ...
// Throws Error(kUsage) listing the valid kinds.
Kind parse_kind(const std::string& name);
// The kinds parse_kind reads, in declaration order: every kind but
// kReferenceActivations (internal to the SVCCA subscriber, not selectable).
// A static list: any thread.
const std::vector<Kind>& all_kinds();

// A copy of a tensor's values as float32, row-major.
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
// Buffers are shared read-only among the subscribers of a packet.
using BufferPtr = std::shared_ptr<const Buffer>;

// A probed layer, as the training side found it; it outlives every packet
// that points at it (until the Hub is closed).
struct LayerInfo {
  std::string name;  // dotted module path, "features.conv1"
  std::string type;  // "Conv2d", "ReLU", ...
  int depth = 1;     // components of the name
  int index = 0;     // position in forward order
};

// Where training is: the global step (1-based, the optimizer step this is),
// the epoch (0-based) and the step within it (0-based).
struct Position {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t step_in_epoch = 0;
};

// All kinds of one layer at one step.
struct LayerPacket {
  const LayerInfo* layer = nullptr;
  Position at;
  std::map<Kind, BufferPtr> tensors;
  // The buffer of kind `k`, or nullptr when this packet holds none; valid
  // while the packet is.
  const Buffer* get(Kind k) const {
    auto it = tensors.find(k);
    return it == tensors.end() ? nullptr : it->second.get();
  }
};

// Meta kinds: what a step or an evaluation says about the whole network.
struct MetaPacket {
  // What the packet reports: a finished batch, a finished epoch, an
  // evaluation (of `split`).
  enum class Event { kBatchFinished, kEpochFinished, kEvaluation };
  Event event = Event::kBatchFinished;
  Position at;
  double loss = 0;      // the batch's mean loss, or the evaluation's
  int64_t correct = 0;  // correctly classified samples of the batch / split
  // Whether `correct` is known: a Python loop's targets go to its own loss
  // function, unseen, so its batches have no train accuracy (not 0).
  bool labelled = true;
  int64_t samples = 0;  // samples of the batch / split
  std::string split;    // kEvaluation: "test", "val", "test_probe" (probe.test_every)
  BufferPtr labels;     // kBatchFinished: the input labels, when a subscriber wants them
  BufferPtr output;     // kBatchFinished: the network's output (logits), likewise
};

// One value of a published series. `layer` is empty for whole-network
// series ("loss", "train_accuracy"); `name` is "<kind>/<stat>" for layer
// series ("weights/update_ratio").
struct SeriesPoint {
  std::string layer;
  std::string name;
  Position at;
  double value = 0;
  int layer_index = -1;  // the layer's forward position; -1 for whole-network series
  // When it was published (unix seconds): one reading of the clock that
  // every output records (the store and the TensorBoard file agree); the
  // hub stamps it.
  double wall_time = 0;
};

// The histogram of one tensor: equal-width bins over its finite range.
struct Histogram {
  double low = 0;
  double high = 0;
  std::vector<int64_t> counts;
  int64_t nan = 0;
  int64_t pos_inf = 0;
  int64_t neg_inf = 0;
  double sum = 0;          // of finite values
  double sum_squares = 0;  // of finite values
  // The finite values binned: the sum of counts.
  int64_t finite() const;
};
// `values` binned into max(1, bins) equal bins over [min, max] of the finite
// values (the maximum in the last bin); NaN and infinities counted apart.
// No finite value: every count 0 and low = high = 0. Pure: any thread.
Histogram make_histogram(const std::vector<float>& values, int bins = 64);

// An alert raised by a rule; printed once and recorded as a run event.
struct Alert {
  std::string name;    // "lr_too_high", "nan_origin", ...
  std::string source;  // layer or series
  Position at;
  std::string message;
};

// Where subscribers publish. Thread-safe.
class Sink {
 public:
  virtual ~Sink() = default;
  // A value of a series: recorded by every output, then handed to the
  // subscribers whose wants_series takes it (nested at most 8 deep, so a
  // cycle of derived series ends).
  virtual void scalar(const SeriesPoint& point) = 0;
  // A histogram of `kind` of `layer` at `at`, for every output.
  virtual void histogram(const std::string& layer, Kind kind, const Position& at,
                         const Histogram& h) = 0;
  // An alert, for every output (the console prints it, the store records it).
  virtual void alert(const Alert& alert) = 0;
};

// A subscriber: built in or a user's own (the C++ plugin API; see
// examples/probe_subscriber.cc).
class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // A short name ("norms") that identifies the subscriber to people.
  virtual std::string name() const = 0;
  // The layer kinds it reads; empty: none (a meta or series subscriber).
  virtual std::set<Kind> kinds() const { return {}; }
  // Called at the steps whose number is a multiple of this (0: the probes'
  // `every`). Step numbers are 1-based global steps, so every 10 means
  // steps 10, 20, 30, ...
  virtual int64_t every() const { return 0; }
  // Also called at every step up to this one (a learning rate shows in the
  // first updates; a period of 10 would miss them).
  virtual int64_t warmup_steps() const { return 0; }
  // Whether on_meta is wanted (every batch and evaluation, whatever every()).
  virtual bool wants_meta() const { return false; }
  // Whether the labels and output of a batch should be copied for it.
  virtual bool wants_batch_tensors() const { return false; }
  // Whether on_series is wanted for this series.
  virtual bool wants_series(const SeriesPoint& point) const { return false; }

  // Called on a Hub worker thread, never on the training thread, with a
  // layer's due kinds (at the steps every() and warmup_steps() make due).
  // Calls for different layers may run at once on different workers. An
  // exception is logged as a warning and the rest of that packet is skipped;
  // training goes on. The packet is valid during the call only.
  virtual void on_layer(const LayerPacket& packet, Sink& sink) {}
  // Every meta packet, in order, on worker 0, when wants_meta().
  virtual void on_meta(const MetaPacket& packet, Sink& sink) {}
  // Each point wants_series() takes, on the publishing thread, under the
  // sink's lock (publishing again from here is allowed).
  virtual void on_series(const SeriesPoint& point, Sink& sink) {}
  // The run is over: a last chance to publish (after every packet).
  virtual void on_end(Sink& sink) {}
};

// Where published results end up (the store, a TensorBoard file, the
// console). Called with the sink's lock held: one call at a time.
class Output {
 public:
  virtual ~Output() = default;
  // Each published scalar; the default ignores it.
  virtual void scalar(const SeriesPoint& point) {}
  // Each published histogram, with its time of publication (unix seconds,
  // one reading for every output); the default ignores it.
  virtual void histogram(const std::string& layer, Kind kind, const Position& at,
                         const Histogram& h, double wall_time) {}
  // Each raised alert; the default ignores it.
  virtual void alert(const Alert& alert) {}
  // After the last publication (Hub::close, once); flush and release here.
  virtual void close() {}
};

// The metric key of a series in the store: "probe/<layer>/<name>", or
// "probe/<name>" for a whole-network series.
std::string series_key(const std::string& layer, const std::string& name);
// The histogram key: "<layer>/<kind>".
std::string histogram_key(const std::string& layer, Kind kind);

}  // namespace trainscope::probes
