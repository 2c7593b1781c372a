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
  auto c = t.to(torch::kCPU).contiguous();  // its bytes, read by the CPU
  return XXH3_64bits(c.data_ptr(), c.numel() * c.element_size());
}

// ---- the device hash ------------------------------------------------------

namespace {

constexpr uint64_t kLengthFactor = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMix1 = 0xbf58476d1ce4e5b9ull, kMix2 = 0x94d049bb133111ebull;

uint64_t splitmix64(uint64_t x) {
  x ^= x >> 30;
  x *= kMix1;
  x ^= x >> 27;
  x *= kMix2;
  return x ^ (x >> 31);
}

// A tensor's bytes as int32 words (a view where they are whole words).
torch::Tensor words_of(const torch::Tensor& t) {
  auto b = t.detach().contiguous().reshape({-1}).view(torch::kUInt8);
  if (const int64_t rest = b.numel() % 4; rest != 0)
    b = torch::cat({b, torch::zeros({4 - rest}, b.options())});
  return b.view(torch::kInt32);
}

// The same arithmetic on int64 tensors, wrapping modulo 2^64; shifts are
// logical (libtorch's right shift of int64 keeps the sign).
torch::Tensor shift_right(const torch::Tensor& x, int k) {
  return x.bitwise_right_shift(k).bitwise_and(static_cast<int64_t>((~0ull) >> k));
}
torch::Tensor splitmix64(torch::Tensor x) {
  x = x.bitwise_xor(shift_right(x, 30)).mul(static_cast<int64_t>(kMix1));
  x = x.bitwise_xor(shift_right(x, 27)).mul(static_cast<int64_t>(kMix2));
  return x.bitwise_xor(shift_right(x, 31));
}

}  // namespace

uint64_t device_hash_of_bytes(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = static_cast<uint64_t>(n) * kLengthFactor;
  for (size_t i = 0; i * 4 < n; ++i) {
    uint32_t w = 0;
    for (size_t j = 0; j < 4 && i * 4 + j < n; ++j)
      w |= static_cast<uint32_t>(p[i * 4 + j]) << (8 * j);
    h += splitmix64(w + (static_cast<uint64_t>(i) << 32));
  }
  return h;
}

std::vector<uint64_t> DeviceHasher::operator()(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> words;
  std::vector<int64_t> bytes;
  for (const auto& t : ts) {
    words.push_back(words_of(t));
    bytes.push_back(t.numel() * static_cast<int64_t>(t.element_size()));
  }
  const torch::Device device = ts.empty() ? torch::kCPU : ts.front().device();
  if (bytes != bytes_ || device != device_) {  // the layout, once
    std::vector<torch::Tensor> pos, seg;
    for (size_t i = 0; i < words.size(); ++i) {
      pos.push_back(torch::arange(words[i].numel(), torch::kInt64));
      seg.push_back(torch::full({words[i].numel()}, static_cast<int64_t>(i), torch::kInt64));
    }
    position_ = torch::cat(pos).bitwise_left_shift(32).to(device);
    segment_ = torch::cat(seg).to(device);
    bytes_ = bytes;
    device_ = device;
  }
  if (ts.empty()) return {};
  // int32 words widened without their sign: the unsigned word.
  auto w = torch::cat(words).to(torch::kInt64).bitwise_and(0xffffffffll).add_(position_);
  auto sums = torch::zeros({static_cast<int64_t>(ts.size())}, w.options())
                  .index_add_(0, segment_, splitmix64(w))
                  .to(torch::kCPU);
  std::vector<uint64_t> out(ts.size());
  const auto* s = sums.data_ptr<int64_t>();
  for (size_t i = 0; i < ts.size(); ++i)
    out[i] = static_cast<uint64_t>(s[i]) + static_cast<uint64_t>(bytes[i]) * kLengthFactor;
  return out;
}

// ---- the unit ---------------------------------------------------------------

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
  // The device hash for a model on a GPU; a resumed run goes on with the
  // hash it began with, whatever device it resumed on (a GPU's tensors are
  // copied for xxh3, a CPU's reduced by the same sums), so that its steps
  // compare. Runs without the tag (every run before GPUs) hash with
  // kHostHash.
  on_device_ = !tensors_.empty() && !tensors_.front().second.is_cpu();
  if (ctx.resumed) {
    const auto tags = ctx.run.store().tags(ctx.run.uuid());
    const auto it = tags.find("fingerprint.hash");
    on_device_ = it != tags.end() && it->second == kDeviceHash;
  } else if (on_device_) {
    ctx.run.set_tag("fingerprint.hash", kDeviceHash);
  }
}

void FingerprintObserver::on_after_step(const instrument::RunContext& ctx,
                                        const instrument::Step& step) {
  if (step.number % ctx.config.section<FingerprintConfig>().every_steps != 0) return;
  std::vector<uint64_t> hashes;
  hashes.reserve(tensors_.size() + 1);
  if (on_device_) {  // reduced where the tensors are: 8 bytes per tensor come back
    std::vector<torch::Tensor> ts;
    for (const auto& [n, t] : tensors_) ts.push_back(t);
    if (step.loss.defined()) ts.push_back(step.loss.detach().to(ts.front().device()));
    hashes = device_hash_(ts);
    if (!step.loss.defined()) hashes.push_back(0);
  } else {
    for (const auto& [n, t] : tensors_) hashes.push_back(tensor_hash(t));
    // A source that did not say what its loss was hashes nothing for it.
    hashes.push_back(step.loss.defined() ? tensor_hash(step.loss.detach()) : 0);
  }
  ctx.run.log_record(kStepsKind, step_record({step.number, std::move(hashes)}, core::unix_now()));
}

TRAINSCOPE_UNIT(fingerprint,
                instrument::Unit{.name = "fingerprint",
                                 .observers = [](const config::Config& c) -> instrument::Observers {
                                   if (c.section<FingerprintConfig>().every_steps <= 0) return {};
                                   return {std::make_shared<FingerprintObserver>()};
                                 }});

}  // namespace trainscope::fingerprint
