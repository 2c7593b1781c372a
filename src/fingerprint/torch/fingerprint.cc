// Fingerprints of a model after each step, and the unit that records them.
#include "trainscope/fingerprint/fingerprint.h"

#include <xxhash.h>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/fingerprint/config.h"
#include "trainscope/fingerprint/records.h"
#include "trainscope/instrument/unit.h"

namespace trainscope::fingerprint {

std::vector<std::pair<std::string, torch::Tensor>> tensors(torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    std::string prefix = item.key().empty() ? "" : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false))
      out.emplace_back(prefix + p.key(), p.value());
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false))
      out.emplace_back(prefix + b.key(), b.value());
  }
  return out;
}

uint64_t tensor_hash(const torch::Tensor& t) {
  auto c = t.contiguous();
  return XXH3_64bits(c.data_ptr(), c.numel() * c.element_size());
}

void FingerprintObserver::on_run_begin(const instrument::RunContext& ctx) {
  tensors_ = tensors(ctx.model);
  std::vector<std::string> names;
  for (const auto& [n, t] : tensors_) names.push_back(n);
  names.push_back("loss");
  // A resumed run hashes what it hashed before, or its steps cannot be
  // compared with each other.
  if (ctx.resumed)
    if (auto before = read_names(ctx.run.store(), ctx.run.uuid());
        !before.empty() && before != names)
      core::fail(core::ErrorKind::kConflict,
                 "run {} already fingerprints a different set of tensors ({} before, {} now)",
                 core::short_uuid(ctx.run.uuid()), before.size(), names.size());
  ctx.run.log_record(kNamesKind, names_record(names));
}

void FingerprintObserver::on_after_step(const instrument::RunContext& ctx,
                                        const instrument::Step& step) {
  if (step.number % ctx.config.section<FingerprintConfig>().every_steps != 0) return;
  std::vector<uint64_t> hashes;
  hashes.reserve(tensors_.size() + 1);
  for (const auto& [n, t] : tensors_) hashes.push_back(tensor_hash(t));
  // A source that did not say what its loss was hashes nothing for it.
  hashes.push_back(step.loss.defined() ? tensor_hash(step.loss.detach()) : 0);
  ctx.run.log_record(kStepsKind, step_record({step.number, std::move(hashes)}, core::unix_now()));
}

TRAINSCOPE_UNIT(fingerprint,
                instrument::Unit{.name = "fingerprint",
                                 .order = 30,
                                 .observers = [](const config::Config& c) -> instrument::Observers {
                                   if (c.section<FingerprintConfig>().every_steps <= 0) return {};
                                   return {std::make_shared<FingerprintObserver>()};
                                 }});

}  // namespace trainscope::fingerprint
