#include "trainscope/profile/profiler.h"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <string_view>
#include <unordered_map>

#include "trainscope/instrument/events.h"

namespace trainscope::profile {

using Clock = std::chrono::steady_clock;

struct IterationProfiler::State {
  Clock::time_point t0;
  IterationProfile prof;
  bool keep_events = true;
  // Layer names are referenced, not copied: scope names live in the model,
  // the others in these maps (node-stable).
  std::unordered_map<int64_t, const std::string*> seq_layer;     // forward seq -> layer
  std::unordered_map<const void*, std::string> storage;          // param/grad data -> layer
  std::unordered_map<std::string, std::string> scope_layers;     // user scope -> its layer
  std::map<std::pair<const std::string*, Phase>, double> cells;  // nullptr = unattributed
  struct Frame {
    double start_us;
    double child_us;
    const std::string* layer;
    Phase phase;
    int64_t seq;
    std::string name;  // only kept for the trace
  };
  std::vector<Frame> stack;
  Phase cur_phase = Phase::kNone;
  // Optimizers update one parameter at a time: a top-level update op with no
  // owned input (a temporary such as Adam's denominator) belongs to the
  // layer of the last owned op.
  const std::string* last_update_layer = nullptr;
  double phase_start_us = 0;
  std::map<Phase, double> op_top_us;  // time inside top-level ops per phase
  at::CallbackHandle handle = 0;
  bool with_inputs = false;
  // Instrumented models (layers::instrument) name their layers while the
  // iteration runs; installed before the profiler's callback, so that the
  // layer is current when the profiler sees an operator start.
  std::unique_ptr<layers::Watch> watch;

  double now_us() const {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
};

namespace {

thread_local IterationProfiler::State* t_state = nullptr;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  auto* st = t_state;
  if (!st) return nullptr;
  IterationProfiler::State::Frame f{st->now_us(), 0, nullptr, st->cur_phase, fn.seqNr(), {}};
  if (st->keep_events) f.name = fn.name();
  const bool backward_fn = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
  if (backward_fn) f.phase = Phase::kBackward;
  if (fn.scope() == at::RecordScope::USER_SCOPE &&
      std::string_view(fn.name()).starts_with(instrument::kScopeLayerPrefix)) {
    auto [it, added] = st->scope_layers.try_emplace(fn.name());
    if (added)
      it->second = it->first.substr(std::string_view(instrument::kScopeLayerPrefix).size());
    f.layer = &it->second;
  } else if (f.phase == Phase::kForward || f.phase == Phase::kLoss) {
    if (const std::string* l = layers::current_layer()) {
      f.layer = l;
      // seqNr() peeks the next autograd sequence number, so an op that
      // creates no node shares it with the next op that does; the last op
      // to see a number before it is taken is the one that created the node.
      if (f.seq >= 0) st->seq_layer[f.seq] = l;
    }
  } else if (f.phase == Phase::kBackward) {
    if (f.seq >= 0 && backward_fn) {
      auto it = st->seq_layer.find(f.seq);
      if (it != st->seq_layer.end()) f.layer = it->second;
    }
  } else if ((f.phase == Phase::kUpdate || f.phase == Phase::kZeroGrad) && fn.needsInputs()) {
    for (const auto& v : fn.inputs()) {
      if (!v.isTensor()) continue;
      const auto& t = v.toTensor();
      if (!t.defined() || !t.has_storage()) continue;
      auto it = st->storage.find(t.storage().data());
      if (it != st->storage.end()) {
        f.layer = &it->second;
        break;
      }
    }
    if (f.layer && st->stack.empty()) st->last_update_layer = f.layer;
    if (!f.layer && st->stack.empty()) f.layer = st->last_update_layer;
  }
  if (!f.layer && !st->stack.empty() && st->stack.back().phase == f.phase)
    f.layer = st->stack.back().layer;  // inherit from the enclosing op
  st->stack.push_back(std::move(f));
  return nullptr;
}

void on_end(const at::RecordFunction&, at::ObserverContext*) {
  auto* st = t_state;
  if (!st || st->stack.empty()) return;
  auto& f = st->stack.back();
  const double dur = st->now_us() - f.start_us;
  const double self = std::max(0.0, dur - f.child_us);
  st->cells[{f.layer, f.phase}] += self;
  if (st->keep_events)
    st->prof.events.push_back({std::move(f.name), f.layer ? *f.layer : std::string(), f.phase,
                               f.start_us, dur, self, f.seq,
                               static_cast<int>(st->stack.size()) - 1});
  const Phase phase = f.phase;
  st->stack.pop_back();
  if (st->stack.empty()) {
    st->op_top_us[phase] += dur;
  } else {
    st->stack.back().child_us += dur;
  }
}

// Inputs are only needed to attribute optimizer ops to layers; asking for
// them elsewhere would copy every operator's arguments.
void install(IterationProfiler::State& st, bool with_inputs) {
  if (st.handle != 0 && st.with_inputs == with_inputs) return;
  if (st.handle != 0) at::removeCallback(st.handle);
  st.handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end).needsInputs(with_inputs));
  st.with_inputs = with_inputs;
}

}  // namespace

IterationProfiler::IterationProfiler(torch::nn::Module& model, bool keep_events, StateFn state)
    : model_(model), keep_events_(keep_events), state_fn_(std::move(state)) {}

IterationProfiler::~IterationProfiler() {
  if (active_) end();
}

void IterationProfiler::begin(int64_t step, bool keep_events) {
  state_ = std::make_unique<State>();
  state_->keep_events = keep_events && keep_events_;
  state_->prof.step = step;
  // Which layer owns each parameter and gradient (for update ops): the
  // owning module path, from the parameter's dotted name.
  for (const auto& p : model_.named_parameters()) {
    std::string layer = p.key().substr(0, p.key().rfind('.'));
    state_->storage[p.value().storage().data()] = layer;
    if (p.value().grad().defined()) state_->storage[p.value().grad().storage().data()] = layer;
  }
  if (state_fn_)
    for (const auto& [param, t] : state_fn_()) {
      if (!param.defined() || !t.defined() || !t.has_storage()) continue;
      auto it = state_->storage.find(param.storage().data());
      if (it != state_->storage.end()) state_->storage[t.storage().data()] = it->second;
    }
  t_state = state_.get();
  state_->watch = std::make_unique<layers::Watch>();
  install(*state_, false);
  state_->t0 = Clock::now();
  active_ = true;
}

void IterationProfiler::phase(Phase p) {
  State& st = *state_;
  double now = st.now_us();
  if (st.cur_phase != Phase::kNone) st.prof.span_us[st.cur_phase] += now - st.phase_start_us;
  install(st, p == Phase::kUpdate || p == Phase::kZeroGrad);
  st.cur_phase = p;
  st.last_update_layer = nullptr;
  st.phase_start_us = st.now_us();
}

IterationProfile IterationProfiler::end() {
  State& st = *state_;
  phase(Phase::kNone);
  st.prof.wall_us = st.now_us();
  at::removeCallback(st.handle);
  st.handle = 0;
  st.watch.reset();
  t_state = nullptr;
  for (const auto& [key, us] : st.cells)
    st.prof.cells[{key.first ? *key.first : std::string(), key.second}] += us;
  active_ = false;
  double spans = 0;
  for (const auto& [p, us] : st.prof.span_us) {
    spans += us;
    st.prof.overhead_us[p] = std::max(0.0, us - st.op_top_us[p]);
  }
  st.prof.other_us = std::max(0.0, st.prof.wall_us - spans);
  st.prof.coverage =
      st.prof.wall_us > 0 ? (st.prof.wall_us - st.prof.other_us) / st.prof.wall_us : 0;
  return std::move(st.prof);
}

}  // namespace trainscope::profile
