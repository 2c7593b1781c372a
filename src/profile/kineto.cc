// A torch.profiler (Kineto) Chrome trace as a run's profile.
#include "trainscope/profile/kineto.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
#include "trainscope/profile/report.h"
#include "trainscope/store/accept.h"
#include "trainscope/store/import.h"
#include "trainscope/store/store.h"

namespace trainscope::profile {

using core::ErrorKind;
using core::fail;
using Json = nlohmann::json;

namespace {

// What an event is to the profile.
enum class Kind { kOp, kPlain, kScope, kStep, kUpdate, kZeroGrad, kData, kBackward };

struct Event {
  std::string name, thread, layer;  // layer: a scope's
  Kind kind = Kind::kPlain;
  double ts = 0, dur = 0;
  int64_t seq = -1;  // an operator's sequence number (autograd's link to backward)
  int parent = -1;   // the innermost event on its thread that holds it
  double child_us = 0;
  std::string ctx_layer, ctx_phase;  // what the events it holds run in
  bool op = false;                   // a CPU operator (cpu_op)
};

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

Kind kind_of(const std::string& cat, const std::string& name, std::string& layer) {
  if (cat == "user_annotation" || cat == "gpu_user_annotation") {
    if (starts(name, "ProfilerStep#")) return Kind::kStep;
    if (starts(name, "Optimizer.step#")) return Kind::kUpdate;
    if (starts(name, "Optimizer.zero_grad#")) return Kind::kZeroGrad;
    if (starts(name, "enumerate(DataLoader)#")) return Kind::kData;
    layer = name;
    return Kind::kScope;
  }
  if (cat == "python_function" && starts(name, "nn.Module: ")) {
    layer = name.substr(11);
    return Kind::kScope;
  }
  if (cat == "cpu_op")
    return starts(name, "autograd::engine::evaluate_function: ") ? Kind::kBackward : Kind::kOp;
  return Kind::kPlain;
}

// A layer name the profile gives its own meaning ("(wall)": a step's span,
// "(other)", "(overhead)", none: time outside layers): a scope so named
// would lose its time or move it (thirty-sixth hunt, B-D2).
void check_layer(const std::string& layer, const std::string& what) {
  if (layer.empty() || layer == "(wall)" || layer == "(other)" || layer == "(overhead)")
    fail(ErrorKind::kUsage,
         "{}: a scope is named '{}', a name trainscope's profile gives its own meaning ((wall), "
         "(other), (overhead), and no name); rename the record_function or module",
         what, core::escape_for_display(layer));
}

double number(const Json& e, const char* key, const std::string& what) {
  auto it = e.find(key);
  // As the profile's reader takes a span: 0 or more, shorter than any
  // calendar (thirty-sixth hunt, B-D3: a dur of 1e300 made a store its
  // reader calls damaged).
  if (it == e.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
      it->get<double>() < 0 || it->get<double>() >= 3.2e17)
    fail(ErrorKind::kUsage,
         "{}: an event's '{}' is not a time in microseconds; is it a trace "
         "torch.profiler wrote?",
         what, key);
  return it->get<double>();
}

// The complete ("X") CPU-side events of the trace, by start time.
std::vector<Event> read_events(const Json& j, const std::string& what) {
  std::vector<Event> out;
  for (const auto& e : j["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("name") || !e["name"].is_string())
      continue;
    const std::string cat = e.value("cat", "");
    if (cat == "kernel" || starts(cat, "gpu_")) continue;  // the device's timeline
    Event ev;
    ev.name = e["name"].get<std::string>();
    ev.kind = kind_of(cat, ev.name, ev.layer);
    if (ev.kind == Kind::kScope) check_layer(ev.layer, what);
    ev.op = cat == "cpu_op";
    ev.ts = number(e, "ts", what);
    ev.dur = number(e, "dur", what);
    ev.thread = e.value("pid", Json()).dump() + "/" + e.value("tid", Json()).dump();
    if (auto a = e.find("args"); a != e.end() && a->is_object())
      if (auto s = a->find("Sequence number"); s != a->end() && s->is_number_integer())
        ev.seq = s->get<int64_t>();
    out.push_back(std::move(ev));
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
  });
  return out;
}

// Each event's parent on its thread, and its children's time.
void nest(std::vector<Event>& ev) {
  std::map<std::string, std::vector<int>> open;  // thread -> stack
  for (int i = 0; i < static_cast<int>(ev.size()); ++i) {
    auto& stack = open[ev[i].thread];
    while (!stack.empty() && ev[stack.back()].ts + ev[stack.back()].dur <= ev[i].ts)
      stack.pop_back();
    if (!stack.empty()) {
      ev[i].parent = stack.back();
      ev[stack.back()].child_us += ev[i].dur;
    }
    stack.push_back(i);
  }
}

// Sets each event's context and returns the (layer, phase) its self time
// goes to. `forward` maps sequence numbers to the layers of their
// forward operators.
std::pair<std::string, std::string> place(std::vector<Event>& ev, size_t i,
                                          std::map<int64_t, std::string>& forward) {
  Event& e = ev[i];
  const Event* p = e.parent >= 0 ? &ev[static_cast<size_t>(e.parent)] : nullptr;
  e.ctx_layer = p ? p->ctx_layer : "";
  e.ctx_phase = p && !p->ctx_phase.empty() ? p->ctx_phase : "forward";
  switch (e.kind) {
    case Kind::kScope:
      e.ctx_layer = e.layer;
      break;
    case Kind::kUpdate:
    case Kind::kZeroGrad:
    case Kind::kData:
      e.ctx_phase = e.kind == Kind::kUpdate ? "update"
                    : e.kind == Kind::kData ? "data"
                                            : "zero_grad";
      e.ctx_layer.clear();
      return {"(overhead)", e.ctx_phase};
    case Kind::kBackward: {
      e.ctx_phase = "backward";
      auto f = forward.find(e.seq);
      e.ctx_layer = f == forward.end() ? "" : f->second;
      break;
    }
    default:
      if (e.op && e.seq >= 0 && e.ctx_phase == "forward") forward.emplace(e.seq, e.ctx_layer);
  }
  return {e.ctx_layer, e.ctx_phase};
}

// Time in [from, to) that no event of `ev` (but `skip`) covers.
double uncovered(const std::vector<Event>& ev, const std::vector<size_t>& in, double from,
                 double to) {
  std::vector<std::pair<double, double>> spans;
  for (size_t i : in)
    spans.emplace_back(std::max(from, ev[i].ts), std::min(to, ev[i].ts + ev[i].dur));
  std::sort(spans.begin(), spans.end());
  double covered = 0, end = from;
  for (const auto& [a, b] : spans) {
    if (b <= end) continue;
    covered += b - std::max(a, end);
    end = b;
  }
  return std::max(0.0, (to - from) - covered);
}

}  // namespace

namespace {

// The step a "ProfilerStep#N" says (a step every reader takes: 0 to
// 2^53), else `fallback`; a step given twice is refused, where one step's
// cells would overwrite the other's (thirty-sixth hunt, B-D3, B-D4).
int64_t step_number(const std::string& name, int64_t fallback, std::set<int64_t>& taken,
                    const std::string& what) {
  const std::string n = name.substr(std::string_view("ProfilerStep#").size());
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(n.c_str(), &end, 10);
  const bool given = !n.empty() && end && *end == '\0';
  const auto why = !given            ? std::nullopt
                   : errno == ERANGE ? std::optional<std::string>(
                                           "its number is no step from 0 "
                                           "to 2^53")
                                     : store::step_problem(static_cast<int64_t>(v));
  if (why)
    fail(ErrorKind::kUsage, "{}: {}: {}; nothing was imported", what,
         core::escape_for_display(name), *why);
  const int64_t step = given ? v : fallback;
  if (!taken.insert(step).second)
    fail(ErrorKind::kUsage,
         "{}: step {} is in it twice (two {} spans); import each profiler run's trace on its "
         "own",
         what, step, core::escape_for_display(name));
  return step;
}

// One step's cells and operators (events `in`, by start time) into `out`.
void add_step(KinetoProfile& out, Json& trace, std::vector<Event>& ev, int64_t step, double from,
              double to, const std::vector<size_t>& in, std::map<int64_t, std::string>& forward) {
  std::map<std::pair<std::string, std::string>, double> cells;
  std::set<std::string> known;
  for (const auto& l : out.layers) known.insert(l.first);
  for (size_t i : in) {
    const auto [layer, phase] = place(ev, i, forward);
    const double self = std::max(0.0, ev[i].dur - ev[i].child_us);
    cells[{layer, phase}] += self;
    if (ev[i].kind == Kind::kScope && known.insert(ev[i].layer).second) {
      const auto colon = ev[i].layer.rfind('_');
      const bool module = ev[i].name != ev[i].layer;  // "nn.Module: Conv2d_0"
      out.layers.emplace_back(
          ev[i].layer,
          Json{{"type", module ? ev[i].layer.substr(0, colon) : "record_function"}}.dump());
    }
    if (ev[i].op)
      trace["traceEvents"].push_back(
          {{"ph", "X"},
           {"name", ev[i].name},
           {"pid", step},
           {"tid", ev[i].thread},
           {"ts", ev[i].ts - from},
           {"dur", ev[i].dur},
           {"args", {{"self_us", self}, {"layer", layer}, {"phase", phase}}}});
  }
  for (const auto& [key, us] : cells) out.cells.push_back({step, key.first, key.second, us});
  out.cells.push_back({step, "(other)", "other", uncovered(ev, in, from, to)});
  out.cells.push_back({step, "(wall)", "wall", to - from});
  out.events += static_cast<int64_t>(in.size());
  ++out.steps;
}

}  // namespace

KinetoProfile read_kineto_trace(std::string_view text, const std::string& what) {
  core::check_json_nesting(text, what);
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents") ||
      !j["traceEvents"].is_array())
    fail(ErrorKind::kUsage,
         "{} is not a Chrome trace (JSON with traceEvents): give one torch.profiler wrote "
         "(prof.export_chrome_trace, tensorboard_trace_handler)",
         what);
  std::vector<Event> ev = read_events(j, what);
  if (ev.empty())
    fail(ErrorKind::kUsage,
         "{} holds no complete CPU events: profile with "
         "activities=[ProfilerActivity.CPU, ...]",
         what);
  nest(ev);
  std::vector<size_t> steps;
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].kind == Kind::kStep) steps.push_back(i);
  KinetoProfile out;
  Json trace = {{"traceEvents", Json::array()}};
  std::map<int64_t, std::string> forward;
  // The events that start in [from, to): a binary search in the sorted
  // events, so that many steps take time in proportion to their events
  // (a scan per step took 339 s for 60k steps: thirty-sixth hunt, A-D6).
  auto events_in = [&](double from, double to, size_t skip) {
    std::vector<size_t> in;
    auto it = std::lower_bound(ev.begin(), ev.end(), from,
                               [](const Event& e, double t) { return e.ts < t; });
    for (auto i = static_cast<size_t>(it - ev.begin()); i < ev.size() && ev[i].ts < to; ++i)
      if (i != skip && ev[i].kind != Kind::kStep) in.push_back(i);
    return in;
  };
  if (steps.empty()) {  // the whole trace, one step
    double end = 0;
    for (const auto& e : ev) end = std::max(end, e.ts + e.dur);
    add_step(out, trace, ev, 0, ev.front().ts, end, events_in(ev.front().ts, end, ev.size()),
             forward);
  }
  std::set<int64_t> taken;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Event& s = ev[steps[k]];
    if (!(s.dur > 0))  // its shares would be 0 of 0 (A-D4)
      fail(ErrorKind::kUsage, "{}: {} spans no time; nothing was imported", what,
           core::escape_for_display(s.name));
    add_step(out, trace, ev, step_number(s.name, static_cast<int64_t>(k), taken, what), s.ts,
             s.ts + s.dur, events_in(s.ts, s.ts + s.dur, steps[k]), forward);
  }
  if (out.events == 0)  // step spans and nothing in them (B-D9)
    fail(ErrorKind::kUsage,
         "{} holds no CPU events inside its profiled steps: profile with "
         "activities=[ProfilerActivity.CPU, ...]",
         what);
  const double first = steps.empty() ? ev.front().ts : ev[steps.front()].ts;
  if (auto base = j.find("baseTimeNanoseconds"); base != j.end() && base->is_number())
    out.start_time = base->get<double>() / 1e9 + first / 1e6;
  out.trace_json = trace.dump(-1, ' ', false, Json::error_handler_t::replace);
  return out;
}

namespace {

// A regular file whose first byte (past blanks) is no '{' is refused
// before it is read whole: a 2 GB file of zeros took 2 GB and 5 s to be
// said no trace (thirty-sixth hunt, A-D5). A FIFO is left to
// read_regular_file, which refuses it without opening it.
void refuse_what_is_no_json(const std::filesystem::path& file, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return;
  std::ifstream in(file, std::ios::binary);
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  if (in && c != '{')
    fail(ErrorKind::kUsage,
         "{} is not a Chrome trace (its first byte is no '{{'): give one torch.profiler wrote "
         "(prof.export_chrome_trace, tensorboard_trace_handler)",
         what);
}

// The run the profile goes to: `options.run`, which holds none yet, or a
// new finished one (not yet in the store); true when it is new.
bool target_run(store::Store& store, const KinetoImportOptions& o, const KinetoProfile& p,
                store::RunInfo& run) {
  if (!o.run.empty()) {
    run = store.resolve_run(o.run);
    // A run has one writer (thirty-sixth hunt, B-D5).
    if (!store::is_terminal(run.status))
      fail(ErrorKind::kConflict,
           "run {} is {}: its writer records into it; import the trace once it has ended, or "
           "into a run of its own (leave out --run)",
           core::short_uuid(run.uuid), store::to_string(run.status));
    if (!read_cells(store, run.uuid).empty())
      fail(ErrorKind::kConflict,
           "run {} has a profile already; import the trace into a run of its own (leave out "
           "--run)",
           core::short_uuid(run.uuid));
    return false;
  }
  if (auto why = store::experiment_problem("--experiment", o.experiment))
    fail(ErrorKind::kUsage, "{}", *why);
  run.uuid = core::new_uuid();
  run.experiment = o.experiment;
  run.name = o.name.empty() ? store::derived_name(o.trace.stem().string(), "kineto") : o.name;
  run.status = store::RunStatus::kFinished;
  // A trace that does not say when (no baseTimeNanoseconds) starts now,
  // not in 1970 (B-D7).
  run.start_time = p.start_time > 0 && store::is_a_time(p.start_time) ? p.start_time : store.now();
  double wall = 0;
  for (const auto& c : p.cells)
    if (c.layer == "(wall)") wall += c.us / 1e6;
  run.end_time = run.heartbeat = run.start_time + wall;
  // Steps that end past the year 9999: every reader would show the run's
  // end as none (thirty-seventh hunt, A-D2).
  if (!store::is_point_time(run.end_time))
    fail(ErrorKind::kUsage,
         "trace '{}': its steps span {:.6g} s from {}, which ends past the year 9999; nothing was "
         "imported",
         core::escape_for_display(o.trace.string()), wall, core::format_utc(run.start_time));
  run.command_line = o.command_line;
  return true;
}

}  // namespace

KinetoImported import_kineto_trace(store::Store& store, const KinetoImportOptions& o) {
  const std::string what = fmt::format("trace '{}'", core::escape_for_display(o.trace.string()));
  refuse_what_is_no_json(o.trace, what);
  const auto text = core::read_regular_file(o.trace, "trace");
  if (!text)
    fail(ErrorKind::kNotFound, "cannot read {}: {}; check that it exists and is readable", what,
         std::strerror(errno));
  const KinetoProfile p = read_kineto_trace(*text, what);
  // Every name checked before anything is written: a refusal after the
  // records would leave part of a profile in --run's run (B-D6).
  const std::string kept = "kineto/" + o.trace.filename().string();
  if (auto why = store::artifact_name_problem(kept))
    fail(ErrorKind::kUsage,
         "{}: the file's name cannot name an artifact ('{}' {}); rename the file (or copy it "
         "under a shorter name) and import that",
         what, store::shown_key(kept), *why);
  store::RunInfo run;
  double coverage = 0;
  auto fill = [&] {
    store.append_records(run.uuid, kStepsKind, cell_records(p.cells));
    store.append_records(run.uuid, kLayersKind, {layers_record(p.layers)});
    store.write_artifact(run.uuid, kTraceArtifact, kTraceKind,
                         [&](std::ostream& out) { out << p.trace_json; });
    store.add_artifact(run.uuid, o.trace, "kineto", kept);
    coverage = summarize(store, run.uuid).coverage_min;  // read back as every reader reads it
  };
  if (target_run(store, o, p, run))
    store::import_whole(store, run, fill);
  else
    fill();
  return {run.uuid, run.name, p.steps, static_cast<int64_t>(p.layers.size()), p.events, coverage};
}

}  // namespace trainscope::profile
