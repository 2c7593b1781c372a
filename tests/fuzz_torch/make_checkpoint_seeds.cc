// Writes the seed corpus of checkpoint_fuzz: real checkpoints of the tiny
// model (tiny_model.h) written by write_checkpoint, checkpoints of other
// optimizers and models, and damaged ones. Each is read back with
// read_checkpoint before it is written: it must load (with the position it
// was written with) or be refused with its expected one-line message.
//
//   make_checkpoint_seeds OUT_DIR     exit 0: every seed behaved as expected
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tiny_model.h"
#include "trainscope/checkpoint/checkpoint.h"
#include "trainscope/core/error.h"

namespace {

using namespace trainscope;
using Entries = std::vector<std::pair<std::string, torch::Tensor>>;

struct Seed {
  std::string name;
  std::string bytes;
  std::string refusal;  // empty: it loads; else the end of its message
};

const instrument::TrainPosition kPos{.epoch = 1,
                                     .batch = 3,
                                     .step = 7,
                                     .epoch_loss_sum = 26.5,
                                     .epoch_correct = 9,
                                     .epoch_seen = 24};

std::string written(const fuzz::Tiny& t, optim::Optimizer& opt,
                    const instrument::TrainPosition& pos) {
  std::ostringstream out;
  checkpoint::write_checkpoint(out, *t.model, opt, t.dropout_gen, pos);
  return out.str();
}

Entries position(const fuzz::Tiny& t, const instrument::TrainPosition& p) {
  return {{"rng.dropout", t.dropout_gen.get_state()},
          {"pos",
           torch::tensor({p.epoch, p.batch, p.step, p.epoch_correct, p.epoch_seen}, torch::kInt64)},
          {"pos.loss_sum", torch::tensor({p.epoch_loss_sum}, torch::kFloat64)},
          {"pos.loss_scale",
           torch::tensor({p.loss_scale, static_cast<double>(p.scale_growth)}, torch::kFloat64)}};
}

// write_checkpoint's layout with `entries` after the model and the optimizer
// (none when `opt` is null).
std::string custom(const fuzz::Tiny& t, optim::Optimizer* opt, const Entries& entries) {
  torch::serialize::OutputArchive a, model_a, opt_a;
  t.model->save(model_a);
  a.write("model", model_a);
  if (opt) {
    opt->save(opt_a);
    a.write("optimizer", opt_a);
  }
  for (const auto& [key, value] : entries) a.write(key, value, true);
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

// A tiny model of `sets`, trained `steps` steps, written at kPos.
std::string trained(const std::vector<std::string>& sets, int steps) {
  auto t = fuzz::make_tiny(sets);
  auto opt = t.optimizer();
  for (int i = 0; i < steps; ++i) t.step(*opt);
  return written(t, *opt, kPos);
}

void write_buffers(torch::serialize::OutputArchive& a, const std::string& key,
                   const std::vector<torch::Tensor>& buffers) {
  a.write(key + "/size", torch::tensor(static_cast<int64_t>(buffers.size())));
  for (size_t i = 0; i < buffers.size(); ++i)
    a.write(key + "/" + std::to_string(i), buffers[i], /*is_buffer=*/true);
}

// Adam's state as libtorch wrote it before 1.5 (Adam::load still reads it).
std::string legacy_adam() {
  auto t = fuzz::make_tiny();
  torch::serialize::OutputArchive a, model_a, opt_a;
  t.model->save(model_a);
  a.write("model", model_a);
  std::vector<torch::Tensor> steps, moments;
  for (const auto& p : t.model->parameters()) {
    steps.push_back(torch::tensor(int64_t{2}));
    moments.push_back(torch::full_like(p, 0.5).detach());
  }
  write_buffers(opt_a, "step_buffers", steps);
  write_buffers(opt_a, "exp_average_buffers", moments);
  write_buffers(opt_a, "exp_average_sq_buffers", moments);
  write_buffers(opt_a, "max_exp_average_sq_buffers", {});
  a.write("optimizer", opt_a);
  for (const auto& [key, value] : position(t, kPos)) a.write(key, value, true);
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

std::vector<Seed> valid_seeds() {
  auto t = fuzz::make_tiny();
  auto opt = t.optimizer();
  std::vector<Seed> out{{"adam-step-0.pt", written(t, *opt, {}), ""}};
  out.push_back({"adam-step-3.pt", trained({}, 3), ""});
  out.push_back({"adam-legacy-format.pt", legacy_adam(), ""});
  out.push_back({"adamw-step-2.pt", trained({"optimizer.name=adamw"}, 2), ""});
  return out;
}

std::vector<Seed> refused_seeds() {
  const std::string damaged = "it is damaged or not a trainscope checkpoint";
  auto t = fuzz::make_tiny();
  auto opt = t.optimizer();
  t.step(*opt);
  auto pos = position(t, kPos);
  std::vector<Seed> out;
  out.push_back({"sgd-momentum-step-2.pt",
                 trained({"optimizer.name=sgd", "optimizer.momentum=0.9"}, 2), damaged});
  out.push_back({"rmsprop-step-2.pt",
                 trained({"optimizer.name=rmsprop", "optimizer.momentum=0.5"}, 2), damaged});
  out.push_back({"adadelta-step-2.pt", trained({"optimizer.name=adadelta"}, 2), damaged});
  out.push_back({"no-dropout-layer.pt", trained({"model.dropout=0"}, 1), damaged});
  out.push_back({"hidden-5.pt", trained({"model.hidden=5"}, 1),
                 "(classifier.fc1.weight is Float [5, 64] in the file, Float [4, 64] here)"});
  auto wide = fuzz::make_tiny({"model.hidden=5"});
  auto wide_opt = wide.optimizer();
  wide.step(*wide_opt);
  out.push_back({"adam-state-of-hidden-5.pt",
                 [&] {
                   torch::serialize::OutputArchive a, model_a, opt_a;
                   t.model->save(model_a);
                   wide_opt->save(opt_a);
                   a.write("model", model_a);
                   a.write("optimizer", opt_a);
                   for (const auto& [k, v] : pos) a.write(k, v, true);
                   std::ostringstream s;
                   a.save_to(s);
                   return s.str();
                 }(),
                 "(optimizer state is Float [5, 64] in the file, Float [4, 64] here)"});
  return out;
}

// Position entries replaced one at a time.
std::vector<Seed> bad_position_seeds() {
  auto t = fuzz::make_tiny();
  auto opt = t.optimizer();
  t.step(*opt);
  const auto with = [&](const std::string& key, const torch::Tensor& v) {
    auto e = position(t, kPos);
    for (auto& [k, value] : e)
      if (k == key) value = v;
    return custom(t, opt.get(), e);
  };
  return {
      {"pos-of-3.pt", with("pos", torch::tensor({1, 3, 7}, torch::kInt64)),
       "(pos is Long [3] in the file, Long [5] here)"},
      {"pos-float.pt", with("pos", torch::tensor({1.f, 3.f, 7.f, 9.f, 24.f})),
       "(pos is Float [5] in the file, Long [5] here)"},
      {"pos-negative.pt", with("pos", torch::tensor({1, -3, 7, 9, 24}, torch::kInt64)),
       "(pos holds impossible counts)"},
      {"pos-2d.pt", with("pos", torch::tensor({1, 3, 7, 9, 24}, torch::kInt64).reshape({5, 1})),
       "(pos is Long [5, 1] in the file, Long [5] here)"},
      {"loss-sum-of-2.pt", with("pos.loss_sum", torch::tensor({1.0, 2.0}, torch::kFloat64)),
       "(pos.loss_sum is Double [2] in the file, Double [1] here)"},
      {"loss-scale-nan.pt",
       with("pos.loss_scale", torch::tensor({std::nan(""), 0.0}, torch::kFloat64)),
       "(pos.loss_scale holds an impossible scale)"},
      // Past what the scaler holds (a float32 scale, an int32 count).
      {"loss-scale-1e299.pt", with("pos.loss_scale", torch::tensor({1e299, 0.0}, torch::kFloat64)),
       "(pos.loss_scale holds an impossible scale)"},
      {"loss-scale-subnormal.pt",
       with("pos.loss_scale", torch::tensor({5e-324, 0.0}, torch::kFloat64)),
       "(pos.loss_scale holds an impossible scale)"},
      {"loss-scale-growth-1e14.pt",
       with("pos.loss_scale", torch::tensor({65536.0, 1e14}, torch::kFloat64)),
       "(pos.loss_scale holds an impossible scale)"},
      {"loss-scale-of-3.pt",
       with("pos.loss_scale", torch::tensor({65536.0, 0.0, 1.0}, torch::kFloat64)),
       "(pos.loss_scale is Double [3] in the file, Double [2] here)"},
      {"rng-of-10-bytes.pt", with("rng.dropout", torch::zeros({10}, torch::kUInt8)),
       "(rng.dropout is Byte [10], not a generator state)"},
      {"rng-float.pt", with("rng.dropout", torch::zeros({5056}, torch::kFloat32)),
       "(rng.dropout is Float [5056], not a generator state)"},
      {"no-optimizer.pt", custom(t, nullptr, position(t, kPos)),
       "it is damaged or not a trainscope checkpoint"},
      {"no-pos.pt", custom(t, opt.get(), {position(t, kPos)[0]}),
       "it is damaged or not a trainscope checkpoint"},
  };
}

// Bytes of a good checkpoint cut short or overwritten: trainscope's zip check
// refuses them before libtorch parses anything.
std::vector<Seed> damaged_seeds(const std::string& good) {
  const auto entry = [](const std::string& name) {
    return fmt::format("(zip entry '{}' does not match its recorded size and CRC-32)", name);
  };
  const std::string no_end = "(it has no zip end record)";
  std::string bad_magic = good, bad_method = good, bad_pickle = good, bad_code = good;
  bad_magic[0] = 'X';
  bad_method[good.rfind("PK\x01\x02") + 10] ^= 0x5a;                   // the last entry's method
  const std::string last = checkpoint::zip_entries(good).back().name;  // .data/serialization_id
  bad_pickle[good.find("optimizer", good.find("archive/data.pklFB"))] ^= 0x20;
  // The one-byte change that crashed libtorch's TorchScript importer (see
  // tests/fuzz/corpus/checkpoint-crashes/README.md); crafted_seeds() has it
  // with its CRC-32 fixed.
  bad_code.replace(good.find("__parameters__"), 14, "__parameteps__");
  return {{"empty.pt", "", "(it is too short for a zip archive)"},
          {"first-512-bytes.pt", good.substr(0, 512), no_end},
          {"first-half.pt", good.substr(0, good.size() / 2), no_end},
          {"without-end-record.pt", good.substr(0, good.size() - 22), no_end},
          {"bad-local-magic.pt", bad_magic, "(a zip entry has no local header)"},
          {"bad-central-method.pt", bad_method, entry(last)},
          {"pickle-byte-flipped.pt", bad_pickle, entry("archive/data.pkl")},
          {"code-parameteps.pt", bad_code, entry("archive/code/__torch__/___torch_mangle_0.py")},
          {"yaml-config.pt", fuzz::kTinyConfig, no_end}};
}

// `bytes` with every entry's recorded CRC-32 made to match its content, as a
// deliberately crafted file would be: trainscope's CRC check lets it through.
std::string with_fixed_crcs(std::string bytes) {
  for (const auto& e : checkpoint::zip_entries(bytes))
    if (const auto crc = checkpoint::zip_content_crc(bytes, e))
      for (int i = 0; i < 4; ++i) bytes[e.header + 16 + i] = static_cast<char>(*crc >> (8 * i));
  return bytes;
}

// Crafted TorchScript classes (CRC-32s fixed): refused by the code check
// before libtorch's type parser sees them.
std::vector<Seed> crafted_seeds(const std::string& good) {
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string b = good;
    b.replace(b.find(from), from.size(), to);  // same length: sizes and offsets hold
    return with_fixed_crcs(b);
  };
  const std::string code = "(code entry 'archive/code/__torch__/___torch_mangle_";
  return {
      {"crafted-parameteps.pt", edited("__parameters__", "__parameteps__"),
       code + "0.py': line 2 is not an attribute declaration)"},
      {"crafted-constant.pt", edited("  flatten : __torch__", "  flatten = __torch__"),
       code + "1.py': line 4 is not an attribute declaration)"},
      {"crafted-self-reference.pt",
       edited("flatten : __torch__.___torch_mangle_2", "flatten : __torch__.___torch_mangle_1"),
       "(its classes contain one another)"},
      {"crafted-undefined-class.pt",
       edited("___torch_mangle_11.Module", "___torch_mangle_99.Module"),
       "(class ___torch_mangle_99 is named but not defined)"},
      // A string length past the pickle's end: libtorch reserves it first.
      {"crafted-string-length.pt",
       edited(std::string("X\x07\0\0\0storage", 12), std::string("X\xff\xff\xff\x7fstorage", 12)),
       "(pickle 'archive/data.pkl': a string is longer than what follows it (opcode 0x58 at "
       "byte "},
      // The dropout generator's storage claims one element more than its
      // record holds: libtorch would size the storage by the claim.
      {"crafted-storage-numel.pt", edited(std::string("M\xc0\x13", 3), std::string("M\xc1\x13", 3)),
       "does not hold the 5057 elements it claims (opcode 0x51 at byte "}};
}

// Reads `s` into a fresh tiny model; empty when it behaved as expected.
std::string check(const Seed& s) {
  auto t = fuzz::make_tiny();
  auto opt = t.optimizer();
  try {
    const auto pos = checkpoint::read_checkpoint(s.bytes.data(), s.bytes.size(), s.name, *t.model,
                                                 opt.get(), &t.dropout_gen);
    if (!s.refusal.empty()) return "loaded, but should be refused";
    const bool fresh = s.name == "adam-step-0.pt";
    if (pos.step != (fresh ? 0 : kPos.step) || pos.epoch_seen != (fresh ? 0 : kPos.epoch_seen) ||
        pos.epoch_loss_sum != (fresh ? 0 : kPos.epoch_loss_sum))
      return fmt::format("loaded at step {}, not the step written", pos.step);
    t.step(*opt);
    return "";
  } catch (const core::Error& e) {
    const std::string m = e.what();
    // The end of its message; one ending in "byte " is followed by an offset.
    const bool matches = s.refusal.ends_with("byte ") ? m.find(s.refusal) != std::string::npos
                                                      : m.ends_with(s.refusal);
    const bool ok = !s.refusal.empty() && matches && e.kind() == core::ErrorKind::kStore &&
                    m.find('\n') == std::string::npos;
    return ok ? "" : "refused: " + m;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_checkpoint_seeds OUT_DIR\n");
    return 2;
  }
  torch::set_num_threads(1);
  std::vector<Seed> seeds = valid_seeds();
  const std::string good = seeds[1].bytes;
  for (auto* more : {&refused_seeds, &bad_position_seeds})
    for (auto& s : (*more)()) seeds.push_back(std::move(s));
  for (auto& s : damaged_seeds(good)) seeds.push_back(std::move(s));
  for (auto& s : crafted_seeds(good)) seeds.push_back(std::move(s));
  std::filesystem::create_directories(argv[1]);
  int bad = 0;
  for (const auto& s : seeds) {
    const std::string problem = check(s);
    std::printf(
        "%-28s %6zu bytes  %s\n", s.name.c_str(), s.bytes.size(),
        problem.empty() ? (s.refusal.empty() ? "loads" : "refused as expected") : problem.c_str());
    bad += !problem.empty();
    std::ofstream(std::filesystem::path(argv[1]) / s.name, std::ios::binary) << s.bytes;
  }
  std::printf("%zu seeds, %d not as expected\n", seeds.size(), bad);
  return bad == 0 ? 0 : 1;
}
