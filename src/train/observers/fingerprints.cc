#include "trainscope/train/observers.h"
#include "trainscope/train/torch_env.h"
#include "trainscope/train/trainer.h"

namespace trainscope::train {

void FingerprintObserver::on_run_begin(const RunContext& ctx) {
  tensors_ = fingerprint_tensors(ctx.model);
  std::vector<std::string> names;
  for (const auto& [n, t] : tensors_) names.push_back(n);
  names.push_back("loss");
  ctx.run.set_fingerprint_names(names);
}

void FingerprintObserver::on_after_step(const RunContext& ctx, const Step& step) {
  if (step.number % ctx.config.fingerprint.every_steps != 0) return;
  std::vector<uint64_t> hashes;
  hashes.reserve(tensors_.size() + 1);
  for (const auto& [n, t] : tensors_) hashes.push_back(tensor_hash(t));
  hashes.push_back(tensor_hash(step.loss.detach()));
  ctx.run.log_fingerprint(step.number, std::move(hashes));
}

}  // namespace trainscope::train
