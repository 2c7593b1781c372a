// A torch.profiler (Kineto) Chrome trace as a run's profile (`profile
// import TRACE.json`): the per-layer cells `profile show`, the dashboard
// and the cost model read, from the trace's own events. Torch-free.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainscope/profile/records.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

// What a Kineto trace holds, as a profile: a plain value.
struct KinetoProfile {
  // Per profiled step (each "ProfilerStep#N" span; the whole trace as step
  // 0 when it has none): "(wall)" its span, each (layer, phase) the self
  // time of the events in that context, "(other)" the span's time no event
  // of any thread covers.
  std::vector<ProfileCell> cells;
  // The layers in first-seen order, as (name, info JSON {"type": ...}).
  std::vector<std::pair<std::string, std::string>> layers;
  // The CPU operators as trainscope's own trace has them (one "X" event
  // each with args.self_us, pid = the step): what `profile show --ops` and
  // `--trace` read.
  std::string trace_json;
  int64_t steps = 0, events = 0;
  double start_time = 0;  // unix seconds of the first step, 0 when the trace does not say
};

// Reads a Chrome trace that torch.profiler wrote (export_chrome_trace,
// tensorboard_trace_handler). A layer is the innermost scope an event runs
// in: a record_function / user annotation (other than the profiler's
// ProfilerStep#N, Optimizer.step#..., Optimizer.zero_grad#... and the
// DataLoader's), or an eager module when the trace has them ("nn.Module:
// Conv2d_0" with with_stack=True; "Conv2d_0", type Conv2d). The phase:
// update inside Optimizer.step#, zero_grad inside Optimizer.zero_grad#,
// data inside the DataLoader's annotation, backward inside an autograd
// engine's evaluate_function (its layer: the layer of the forward operator
// with the same sequence number), else forward. Every event's self time
// (its duration less its children's on its thread) goes to its context's
// (layer, phase); phase markers' own time to "(overhead)". Throws
// Error(kUsage) naming `what` when it is not such a trace (no traceEvents,
// no complete events, nesting deeper than JSON allows).
KinetoProfile read_kineto_trace(std::string_view json, const std::string& what);

// Where import_kineto_trace records the profile.
struct KinetoImportOptions {
  std::filesystem::path trace;  // the trace file
  std::string run;              // an existing run (reference) to add it to; empty: a new run
  std::string name, experiment = "profile";  // the new run's
  std::string command_line;                  // the new run's
};

// What import_kineto_trace did.
struct KinetoImported {
  std::string uuid, name;
  int64_t steps = 0, layers = 0, events = 0;
  double coverage_min = 0;  // as profile show computes it
};

// Reads the trace (a regular file, never a FIFO), then records its profile
// in the run: a new finished run (named after the file unless `name`), or
// the existing `run`, which must hold no profile yet (Error(kConflict)).
// The cells and layers as profile records, the operators as the run's
// trace artifact, and the file itself as artifact `kineto/<file name>`
// (kind "kineto"). A new run that a write fails for is deleted.
KinetoImported import_kineto_trace(store::Store& store, const KinetoImportOptions& options);

}  // namespace trainscope::profile
