// A capability added from outside trainscope's own folders: the fraction
// of each weight tensor's elements whose sign changed since the previous
// measured step (a cheap signal of how much a layer is still moving; a
// fraction near 0.5 is a layer whose weights oscillate around zero).
//
// Like every capability it brings its config section (sign_flips.every),
// its observer and its records (kind "sign_flips", one per tensor and
// measured step: the fraction as f64), and joins every event source with
// one registration line each. Nothing in train/, store/ or cli/ knows it.
#include "capability/sign_flips.h"

#include <torch/torch.h>

#include "trainscope/config/section.h"
#include "trainscope/instrument/unit.h"
#include "trainscope/store/payload.h"

namespace sign_flips {

namespace ts = trainscope;

TRAINSCOPE_CONFIG_SECTION(
    sign_flips,
    ts::config::Section{.name = SignFlipsConfig::kName,
                        .fields = {ts::config::int_key(
                            "sign_flips.every", &SignFlipsConfig::every, 0, ts::config::kMaxSteps,
                            "Fraction of weights whose sign changed, every N steps (0: off)")}});

void SignFlipsObserver::on_run_begin(const ts::instrument::RunContext& ctx) {
  for (const auto& p : ctx.model.named_parameters())
    if (p.value().dim() > 1) last_[p.key()] = p.value().detach().sign().clone();
}

void SignFlipsObserver::on_after_step(const ts::instrument::RunContext& ctx,
                                      const ts::instrument::Step& step) {
  const int64_t every = ctx.config.section<SignFlipsConfig>().every;
  if (step.number % every != 0) return;
  for (const auto& p : ctx.model.named_parameters()) {
    auto it = last_.find(p.key());
    if (it == last_.end()) continue;
    torch::Tensor now = p.value().detach().sign();
    const double flipped = now.ne(it->second).to(torch::kDouble).mean().item<double>();
    it->second = now.clone();
    ts::store::PayloadWriter w;
    w.f64(flipped);
    ctx.run.log_record(kKind, {p.key(), step.number, 0, w.take()});
  }
}

double read_fraction(const ts::store::Record& r) {
  ts::store::PayloadReader in(r.payload, "sign_flips record " + r.key);
  const double v = in.f64();
  in.finish();
  return v;
}

TRAINSCOPE_UNIT(sign_flips, ts::instrument::Unit{
                                .name = "sign_flips", .observers = [](const ts::config::Config& c) {
                                  ts::instrument::Observers out;
                                  if (c.section<SignFlipsConfig>().every > 0)
                                    out.push_back(std::make_shared<SignFlipsObserver>());
                                  return out;
                                }});

}  // namespace sign_flips
