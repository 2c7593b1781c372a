#include "checkpoint.h"

#include <torch/torch.h>

#include "trainscope/core/error.h"

namespace fs = std::filesystem;

namespace trainscope::train {
using core::ErrorKind;
using core::fail;

std::string checkpoint_name(int64_t step) {
  return fmt::format("checkpoints/step-{:09d}.pt", step);
}

void write_checkpoint(std::ostream& out, Classifier& model, Optimizer& opt,
                      const at::Generator& dropout_gen, const TrainPosition& pos) {
  torch::serialize::OutputArchive a;
  torch::serialize::OutputArchive model_a, opt_a;
  model.save(model_a);
  opt.save(opt_a);
  a.write("model", model_a);
  a.write("optimizer", opt_a);
  a.write("rng.dropout", dropout_gen.get_state(), true);
  a.write("pos",
          torch::tensor({pos.epoch, pos.batch, pos.step, pos.epoch_correct, pos.epoch_seen},
                        torch::kInt64),
          true);
  a.write("pos.loss_sum", torch::tensor({pos.epoch_loss_sum}, torch::kFloat64), true);
  a.save_to(out);
}

TrainPosition read_checkpoint(const fs::path& path, Classifier& model, Optimizer* opt,
                              at::Generator* dropout_gen) {
  torch::serialize::InputArchive a;
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail(ErrorKind::kNotFound, "checkpoint '{}' does not exist (moved or deleted?)", path.string());
  try {
    a.load_from(path.string());
  } catch (const c10::Error&) {
    fail(ErrorKind::kStore,
         "checkpoint '{}' cannot be read; it is damaged or not a trainscope checkpoint",
         path.string());
  }
  torch::serialize::InputArchive model_a, opt_a;
  a.read("model", model_a);
  model.load(model_a);
  if (opt) {
    a.read("optimizer", opt_a);
    opt->load(opt_a);
  }
  torch::Tensor state, p, loss;
  if (dropout_gen) {
    a.read("rng.dropout", state, true);
    dropout_gen->set_state(state);
  }
  a.read("pos", p, true);
  a.read("pos.loss_sum", loss, true);
  auto pa = p.accessor<int64_t, 1>();
  TrainPosition pos;
  pos.epoch = pa[0];
  pos.batch = pa[1];
  pos.step = pa[2];
  pos.epoch_correct = pa[3];
  pos.epoch_seen = pa[4];
  pos.epoch_loss_sum = loss.item<double>();
  return pos;
}

std::optional<store::ArtifactInfo> find_checkpoint(store::Store& store, const std::string& uuid,
                                                   const std::string& name) {
  std::optional<store::ArtifactInfo> best;
  for (auto& a : store.artifacts(uuid)) {
    if (a.kind != kCheckpointKind) continue;
    if (!name.empty()) {
      if (a.name == name || a.name == "checkpoints/" + name) {
        store::verify_artifact(a);
        return a;
      }
      continue;
    }
    if (!best || a.name > best->name) best = a;
  }
  if (best) store::verify_artifact(*best);  // never train on from a damaged file
  return best;
}

}  // namespace trainscope::train
