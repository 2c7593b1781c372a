#include "checkpoint.h"

#include <torch/torch.h>

#include <functional>
#include <stdexcept>
#include <vector>

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

namespace {

using torch::serialize::InputArchive;

// A tensor of the checkpoint that does not fit what it is read into.
struct Unfit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A model tensor and the checkpoint's value for it, copied in only once every
// tensor has been read and checked.
struct Staged {
  torch::Tensor into, from;
};

std::string describe(const torch::Tensor& t) {
  if (t.dim() > 8)
    return fmt::format("{} of {} dimensions", c10::toString(t.scalar_type()), t.dim());
  return fmt::format("{} [{}]", c10::toString(t.scalar_type()), fmt::join(t.sizes(), ", "));
}

// libtorch's unpickler takes a tensor's sizes, strides and offset from the
// file as they are: true when every element lies inside the storage.
bool within_storage(const torch::Tensor& t) {
  if (t.layout() != torch::kStrided || !t.has_storage() || t.storage_offset() < 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) < 0 || t.stride(d) < 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 0) return true;  // no element at all
  int64_t last = t.storage_offset(), span = 0, bytes = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (__builtin_mul_overflow(t.size(d) - 1, t.stride(d), &span) ||
        __builtin_add_overflow(last, span, &last))
      return false;
  if (__builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, static_cast<int64_t>(t.element_size()), &bytes))
    return false;
  return static_cast<uint64_t>(bytes) <= t.storage().nbytes();
}

// `t`, read for `what`, has the dtype, shape and device of `like`.
void check_like(const torch::Tensor& t, const torch::Tensor& like, const std::string& what) {
  if (t.scalar_type() != like.scalar_type() || t.sizes() != like.sizes() ||
      t.device() != like.device())
    throw Unfit(fmt::format("{} is {} in the file, {} here", what, describe(t), describe(like)));
  if (!within_storage(t)) throw Unfit(fmt::format("{} lies outside its storage", what));
}

// Reads the parameters and buffers of `m` and its children, laid out as
// Module::save writes them, into new tensors checked against the model's.
void stage(torch::nn::Module& m, InputArchive& a, const std::string& prefix,
           std::vector<Staged>& out) {
  const auto take = [&](const std::string& key, const torch::Tensor& into, bool buffer) {
    torch::Tensor from;
    a.read(key, from, buffer);
    check_like(from, into, prefix + key);
    out.push_back({into, from});
  };
  for (const auto& p : m.named_parameters(/*recurse=*/false)) take(p.key(), p.value(), false);
  for (const auto& b : m.named_buffers(/*recurse=*/false)) take(b.key(), b.value(), true);
  for (const auto& c : m.named_children()) {
    if (!c.value()->is_serializable()) continue;
    InputArchive child;
    a.read(c.key(), child);
    stage(*c.value(), child, prefix + c.key() + ".", out);
  }
}

// libtorch's optimizers take their state tensors as the file has them; the
// fused Adam then writes a parameter's numel() elements into each.
void read_optimizer(InputArchive& a, Optimizer& opt) {
  InputArchive opt_a;
  a.read("optimizer", opt_a);
  opt.load(opt_a);
  for (const auto& [param, state] : opt.state_tensors()) {
    check_like(state, param, "optimizer state");
    if (!state.is_non_overlapping_and_dense())
      throw Unfit("an optimizer state tensor is not dense");
  }
}

torch::Tensor read_rng_state(InputArchive& a) {
  torch::Tensor state;
  a.read("rng.dropout", state, true);
  if (state.scalar_type() != torch::kByte || state.dim() != 1 || !state.is_cpu() ||
      !within_storage(state) || !state.is_contiguous())
    throw Unfit(fmt::format("rng.dropout is {}, not a generator state", describe(state)));
  return state;
}

TrainPosition read_position(InputArchive& a) {
  torch::Tensor p, loss;
  a.read("pos", p, true);
  a.read("pos.loss_sum", loss, true);
  check_like(p, torch::empty({5}, torch::kInt64), "pos");
  check_like(loss, torch::empty({1}, torch::kFloat64), "pos.loss_sum");
  const auto pa = p.accessor<int64_t, 1>();
  TrainPosition pos{.epoch = pa[0],
                    .batch = pa[1],
                    .step = pa[2],
                    .epoch_loss_sum = loss.item<double>(),
                    .epoch_correct = pa[3],
                    .epoch_seen = pa[4]};
  if (pos.epoch < 0 || pos.batch < 0 || pos.step < 0 || pos.epoch_correct < 0 ||
      pos.epoch_seen < pos.epoch_correct)
    throw Unfit("pos holds impossible counts");
  return pos;
}

// Everything is read and checked before the model and the generator change.
TrainPosition read_archive(InputArchive& a, Classifier& model, Optimizer* opt,
                           at::Generator* dropout_gen) {
  std::vector<Staged> weights;
  InputArchive model_a;
  a.read("model", model_a);
  stage(model, model_a, "", weights);
  if (opt) read_optimizer(a, *opt);
  torch::Tensor rng_state;
  if (dropout_gen) rng_state = read_rng_state(a);
  const TrainPosition pos = read_position(a);
  if (dropout_gen) dropout_gen->set_state(rng_state);
  torch::NoGradGuard no_grad;
  for (auto& w : weights) w.into.copy_(w.from);
  return pos;
}

// Whatever libtorch throws while opening or reading the archive (c10::Error,
// a missing key, a value of the wrong type) is one message naming the file.
TrainPosition read_guarded(const std::string& name, const std::function<void(InputArchive&)>& open,
                           Classifier& model, Optimizer* opt, at::Generator* dropout_gen) {
  std::string why;
  try {
    InputArchive a;
    open(a);
    return read_archive(a, model, opt, dropout_gen);
  } catch (const Unfit& e) {
    why = fmt::format(" ({})", e.what());
  } catch (const std::exception&) {  // libtorch's own text spans lines (a backtrace)
  }
  fail(ErrorKind::kStore,
       "checkpoint '{}' cannot be read; it is damaged or not a trainscope checkpoint{}", name, why);
}

}  // namespace

TrainPosition read_checkpoint(const fs::path& path, Classifier& model, Optimizer* opt,
                              at::Generator* dropout_gen) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail(ErrorKind::kNotFound, "checkpoint '{}' does not exist (moved or deleted?)", path.string());
  return read_guarded(
      path.string(), [&](InputArchive& a) { a.load_from(path.string()); }, model, opt, dropout_gen);
}

TrainPosition read_checkpoint(const char* data, size_t size, const std::string& name,
                              Classifier& model, Optimizer* opt, at::Generator* dropout_gen) {
  return read_guarded(
      name, [&](InputArchive& a) { a.load_from(data, size); }, model, opt, dropout_gen);
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
