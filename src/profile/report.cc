#include "trainscope/profile/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "trainscope/core/error.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/svg.h"
#include "trainscope/core/util.h"

namespace trainscope::profile {
using core::host_name;

using store::Store;

std::vector<std::pair<std::string, std::string>> layers_to_json(
    const std::vector<LayerInfo>& layers) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& l : layers) {
    nlohmann::json j = {{"type", l.type},
                        {"in_shape", l.in_shape},
                        {"out_shape", l.out_shape},
                        {"params", l.params},
                        {"flops", l.flops},
                        {"bytes", l.bytes},
                        {"activation_bytes", l.activation_bytes},
                        {"in_channels", l.in_channels},
                        {"out_channels", l.out_channels},
                        {"kernel", l.kernel},
                        {"stride", l.stride},
                        {"groups", l.groups},
                        {"param_tensors", l.param_tensors},
                        {"param_bytes", l.param_bytes}};
    out.emplace_back(l.name, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

namespace {

// One layer's stored facts, read as layers_to_json writes them: a field of
// another type, or a count no layer has (negative, not finite, over 1e21),
// is a damaged store (exit 5), never the JSON library's error.
class Facts {
 public:
  Facts(const std::string& layer, const std::string& text) : layer_(layer) {
    const std::string what = "the profile facts of layer " + layer;
    core::check_json_nesting(text, what);
    j_ = nlohmann::json::parse(text, nullptr, false);
    if (j_.is_discarded() || !j_.is_object())
      core::fail(core::ErrorKind::kStore, "{} are not a JSON object; the store is damaged",
                 core::escape_for_display(what));
  }
  std::string text(const char* key) const {
    if (absent(key)) return "";
    if (!j_[key].is_string()) bad(key, "is not text");
    return j_[key].get<std::string>();
  }
  double amount(const char* key, double fallback) const {
    if (absent(key)) return fallback;
    const auto& v = j_[key];
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1e21))
      bad(key, "is " + shown(v) + ", which no layer has");
    return v.get<double>();
  }
  int64_t whole(const char* key, int64_t fallback) const {
    if (absent(key)) return fallback;
    return whole_of(key, j_[key]);
  }
  std::vector<int64_t> shape(const char* key) const {
    std::vector<int64_t> out;
    if (absent(key)) return out;
    if (!j_[key].is_array()) bad(key, "is not a list of sizes");
    for (const auto& v : j_[key]) out.push_back(whole_of(key, v));
    return out;
  }

 private:
  bool absent(const char* key) const { return !j_.contains(key) || j_[key].is_null(); }
  int64_t whole_of(const char* key, const nlohmann::json& v) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 53))
      bad(key, "is " + shown(v) + ", which is no count");
    return v.get<int64_t>();
  }
  static std::string shown(const nlohmann::json& v) {
    return std::string(
        core::utf8_prefix(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 64));
  }
  [[noreturn]] void bad(const char* key, const std::string& why) const {
    core::fail(core::ErrorKind::kStore,
               "the profile facts of layer {}: {} {}; the store is damaged",
               core::escape_for_display(layer_), key, core::escape_for_display(why));
  }
  std::string layer_;
  nlohmann::json j_;
};

}  // namespace

std::vector<LayerInfo> layers_from_json(
    const std::vector<std::pair<std::string, std::string>>& rows) {
  std::vector<LayerInfo> out;
  for (const auto& [name, text] : rows) {
    const Facts f(name, text);
    LayerInfo l;
    l.name = name;
    l.type = f.text("type");
    l.in_shape = f.shape("in_shape");
    l.out_shape = f.shape("out_shape");
    l.params = f.whole("params", 0);
    l.flops = f.amount("flops", 0.0);
    l.bytes = f.amount("bytes", 0.0);
    l.activation_bytes = f.amount("activation_bytes", 0.0);
    l.in_channels = f.whole("in_channels", 0);
    l.out_channels = f.whole("out_channels", 0);
    l.kernel = f.whole("kernel", 0);
    l.stride = f.whole("stride", 1);
    l.groups = f.whole("groups", 1);
    // Profiles stored before these fields: float32, weight + bias.
    l.param_tensors = f.whole("param_tensors", l.params > 0 ? 2 : 0);
    l.param_bytes = f.amount("param_bytes", 4.0 * static_cast<double>(l.params));
    out.push_back(std::move(l));
  }
  mark_input_gradients(out);
  return out;
}

std::vector<ProfileCell> to_cells(const std::vector<IterationProfile>& profiles) {
  std::vector<ProfileCell> out;
  for (const auto& p : profiles) {
    for (const auto& [key, us] : p.cells)
      out.push_back({p.step, key.first, to_string(key.second), us});
    for (const auto& [phase, us] : p.overhead_us)
      out.push_back({p.step, "(overhead)", to_string(phase), us});
    out.push_back({p.step, "(other)", "other", p.other_us});
    out.push_back({p.step, "(wall)", "wall", p.wall_us});
  }
  return out;
}

namespace {

int trace_tid(Phase ph) {
  switch (ph) {
    case Phase::kForward:
    case Phase::kLoss:
      return 1;
    case Phase::kBackward:
      return 2;
    case Phase::kUpdate:
    case Phase::kZeroGrad:
      return 3;
    default:
      return 4;
  }
}

// Names the process of one iteration and its four tracks.
void trace_metadata(nlohmann::json& events, int pid, const IterationProfile& p) {
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"name", fmt::format("step {}", p.step)}}}});
  events.push_back({{"name", "process_sort_index"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"sort_index", pid}}}});
  static const char* kTracks[] = {"forward", "backward", "update", "other"};
  for (int tid : {1, 2, 3, 4})
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", kTracks[tid - 1]}}}});
}

// One iteration's operators and fwd->bwd arrows; flow ids are unique across
// iterations (pid in the high bits).
void trace_events(nlohmann::json& events, int pid, const IterationProfile& p) {
  std::map<int64_t, const TraceEvent*> fwd_by_seq;
  for (const auto& e : p.events)
    if ((e.phase == Phase::kForward || e.phase == Phase::kLoss) && e.seq >= 0 &&
        !fwd_by_seq.count(e.seq))
      fwd_by_seq[e.seq] = &e;
  std::set<int64_t> linked;
  for (const auto& e : p.events) {
    events.push_back({{"name", e.name},
                      {"cat", to_string(e.phase)},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.dur_us},
                      {"pid", pid},
                      {"tid", trace_tid(e.phase)},
                      {"args",
                       {{"layer", e.layer.empty() ? "(unattributed)" : e.layer},
                        {"self_us", e.self_us},
                        {"seq", e.seq}}}});
    if (e.phase != Phase::kBackward || e.seq < 0 || !fwd_by_seq.count(e.seq) ||
        !linked.insert(e.seq).second)
      continue;
    const auto* f = fwd_by_seq[e.seq];
    const int64_t id = (static_cast<int64_t>(pid) << 40) + e.seq;
    events.push_back({{"name", "fwd->bwd"},
                      {"cat", "flow"},
                      {"ph", "s"},
                      {"id", id},
                      {"ts", f->start_us},
                      {"pid", pid},
                      {"tid", trace_tid(f->phase)}});
    events.push_back({{"name", "fwd->bwd"},
                      {"cat", "flow"},
                      {"ph", "f"},
                      {"bp", "e"},
                      {"id", id},
                      {"ts", e.start_us},
                      {"pid", pid},
                      {"tid", 2}});
  }
}

}  // namespace

std::string chrome_trace(const std::vector<IterationProfile>& steps) {
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json info = nlohmann::json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const int pid = static_cast<int>(i) + 1;
    trace_metadata(events, pid, steps[i]);
    trace_events(events, pid, steps[i]);
    info.push_back(
        {{"step", steps[i].step}, {"wall_us", steps[i].wall_us}, {"coverage", steps[i].coverage}});
  }
  nlohmann::json j = {{"traceEvents", events},
                      {"displayTimeUnit", "ms"},
                      {"otherData", {{"trainscope_trace", 2}, {"steps", info}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Field `key` of trace event `e`, as trainscope's writer writes it: a time
// in us (finite, 0 or more, under 10,000 years), a whole number, or text;
// `fallback` when absent. Anything else is a damaged trace (exit 5), never
// the JSON library's type error.
double trace_us(const nlohmann::json& e, const char* key, const std::string& what) {
  if (!e.contains(key)) return 0;
  const auto& v = e[key];
  if (v.is_number() && v.get<double>() >= 0 && v.get<double>() < 3.2e17) return v.get<double>();
  core::fail(
      core::ErrorKind::kStore, "{}: an event's {} is {}, which is no time; the trace is damaged",
      what, key,
      core::escape_cut(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 64));
}

std::string trace_text(const nlohmann::json& e, const char* key, const std::string& fallback,
                       const std::string& what) {
  if (!e.contains(key)) return fallback;
  if (e[key].is_string()) return e[key].get<std::string>();
  core::fail(core::ErrorKind::kStore, "{}: an event's {} is not text; the trace is damaged", what,
             key);
}

int64_t trace_whole(const nlohmann::json& e, const char* key, const std::string& what) {
  if (!e.contains(key)) return 0;
  if (e[key].is_number_integer()) return e[key].get<int64_t>();
  core::fail(core::ErrorKind::kStore,
             "{}: an event's {} is not a whole number; the trace is "
             "damaged",
             what, key);
}

}  // namespace

OperatorTable operator_table(std::string_view trace_json, const std::string& what) {
  if (core::json_nesting(trace_json) > core::kMaxNesting)
    core::fail(core::ErrorKind::kStore, "{} is not a Chrome trace written by trainscope", what);
  nlohmann::json j = nlohmann::json::parse(trace_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents") ||
      !j["traceEvents"].is_array())
    core::fail(core::ErrorKind::kStore, "{} is not a Chrome trace written by trainscope", what);
  OperatorTable t;
  std::map<std::string, OperatorStat> by_name;
  std::set<int64_t> pids;
  for (const auto& e : j["traceEvents"]) {
    if (!e.is_object() || trace_text(e, "ph", "", what) != "X") continue;
    const auto& args = e.contains("args") ? e["args"] : nlohmann::json::object();
    if (!args.is_object() || !args.contains("self_us"))
      core::fail(core::ErrorKind::kStore,
                 "{} has no self times (written before trainscope recorded them); profile the "
                 "run again",
                 what);
    OperatorStat& s = by_name[trace_text(e, "name", "?", what)];
    s.calls += 1;
    s.self_us += trace_us(args, "self_us", what);
    s.total_us += trace_us(e, "dur", what);
    pids.insert(trace_whole(e, "pid", what));
  }
  t.steps = static_cast<int64_t>(pids.size());
  for (auto& [name, s] : by_name) {
    s.name = name;
    t.self_us += s.self_us;
    t.ops.push_back(std::move(s));
  }
  std::sort(t.ops.begin(), t.ops.end(),
            [](const OperatorStat& a, const OperatorStat& b) { return a.self_us > b.self_us; });
  return t;
}

OperatorTable operator_table(Store& store, const std::string& uuid) {
  std::optional<store::ArtifactInfo> trace;
  for (auto& a : store.artifacts(uuid))
    if (a.kind == kTraceKind && (!trace || a.name == kTraceArtifact)) trace = std::move(a);
  if (!trace)
    core::fail(core::ErrorKind::kNotFound,
               "run {} has no trace; profile it with `trainscope profile CONFIG` or "
               "profile.enabled: true",
               core::short_uuid(uuid));
  store::verify_artifact(*trace);
  std::ifstream in(trace->path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return operator_table(text, trace->path.string());
}

double mean_metric(Store& store, const std::string& uuid, const std::string& key) {
  std::vector<double> values;
  for (const auto& p : store.metric(uuid, key)) values.push_back(p.value);
  return core::mean(values);
}

ProfileSummary summarize(Store& store, const std::string& uuid) {
  ProfileSummary s;
  auto cells = read_cells(store, uuid);
  auto layers = layers_from_json(read_layers(store, uuid));
  std::set<int64_t> steps;
  std::map<std::string, LayerTime> by_layer;
  std::vector<double> coverage;
  std::map<int64_t, double> wall, other;
  for (const auto& c : cells) {
    steps.insert(c.step);
    if (c.layer == "(wall)") {
      wall[c.step] = c.us;
      continue;
    }
    if (c.layer == "(other)") {
      other[c.step] = c.us;
      s.categories["other"] += c.us;
      continue;
    }
    if (c.layer.empty() || c.layer == "(overhead)") {
      std::string cat = c.phase + (c.layer.empty() ? " (unattributed ops)" : " (framework)");
      if (c.phase == "data" || c.phase == "zero_grad" || c.phase == "recording" ||
          c.phase == "loss")
        cat = c.phase;
      s.categories[cat] += c.us;
      continue;
    }
    auto& lt = by_layer[c.layer];
    lt.layer = c.layer;
    if (c.phase == "forward" || c.phase == "loss")
      lt.forward_us += c.us;
    else if (c.phase == "backward")
      lt.backward_us += c.us;
    else
      lt.update_us += c.us;
  }
  s.iterations = static_cast<int64_t>(steps.size());
  if (s.iterations == 0) return s;
  const double n = static_cast<double>(s.iterations);
  for (auto& [k, v] : s.categories) v /= n;
  double wsum = 0;
  for (const auto& [step, w] : wall) {
    wsum += w;
    coverage.push_back(w > 0 ? (w - other[step]) / w : 0);
  }
  s.wall_us = wsum / n;
  s.coverage_min = coverage.empty() ? 0 : *std::min_element(coverage.begin(), coverage.end());
  for (double c : coverage) s.coverage_mean += c / static_cast<double>(coverage.size());
  // Forward order from the layer facts, then any layer only seen in times.
  for (const auto& l : layers) {
    LayerTime lt;
    if (by_layer.count(l.name)) lt = by_layer[l.name];
    lt.layer = l.name;
    lt.type = l.type;
    lt.flops = l.flops;
    by_layer.erase(l.name);
    lt.forward_us /= n, lt.backward_us /= n, lt.update_us /= n;
    s.layers.push_back(lt);
  }
  for (auto& entry : by_layer) {
    // Parameter owners deeper than the scoped layer (e.g. "features.conv1"
    // owning updates) merge into their scoped prefix when there is one.
    LayerTime& lt = entry.second;
    const std::string& name = entry.first;
    lt.forward_us /= n, lt.backward_us /= n, lt.update_us /= n;
    auto it = std::find_if(s.layers.begin(), s.layers.end(),
                           [&](const LayerTime& x) { return x.layer == name; });
    if (it == s.layers.end()) s.layers.push_back(lt);
  }
  return s;
}

std::string layer_chart_svg(const ProfileSummary& s, const std::string& title) {
  const int row = 18, left = 220, width = 980;
  const int height = 60 + row * static_cast<int>(s.layers.size()) + 30;
  double max_total = 1e-9;
  for (const auto& l : s.layers) max_total = std::max(max_total, l.total());
  const double scale = (width - left - 40) / max_total;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n",
      width, height, width / 2, core::xml_escape(title));
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c"};
  const char* names[] = {"forward", "backward", "update"};
  for (int i = 0; i < 3; ++i)
    o += fmt::format(
        "<rect x=\"{}\" y=\"30\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"40\">{}</text>\n",
        left + i * 110, colours[i], left + i * 110 + 16, names[i]);
  int y = 55;
  for (const auto& l : s.layers) {
    // A layer's name is the store's (a watched model names its own
    // layers): text, never markup.
    const std::string layer = core::xml_escape(l.layer);
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 12,
                     layer);
    double x = left;
    double parts[] = {l.forward_us, l.backward_us, l.update_us};
    for (int i = 0; i < 3; ++i) {
      double w = parts[i] * scale;
      if (w > 0)
        o += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{} {}: "
            "{:.1f} us</title></rect>\n",
            x, y, w, row - 4, colours[i], layer, names[i], parts[i]);
      x += w;
    }
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#555\">{:.0f} us</text>\n", x + 4, y + 12,
                     l.total());
    y += row;
  }
  o += fmt::format(
      "<text x=\"{}\" y=\"{}\" fill=\"#555\">mean per profiled iteration; wall {:.1f} ms, coverage "
      "{:.1f}%</text>\n",
      left, y + 16, s.wall_us / 1000, s.coverage_mean * 100);
  return o + "</svg>\n";
}

}  // namespace trainscope::profile
