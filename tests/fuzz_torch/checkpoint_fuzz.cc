// read_checkpoint() from bytes: libtorch's zip, pickle and TorchScript reader
// under trainscope's checks. Each input is a would-be checkpoint of the tiny
// model (tiny_model.h). It loads, and then one training step on it must run,
// or read_checkpoint throws core::Error with one line. Built by clang with
// libFuzzer + ASan + UBSan against the Release build's gcc-built libraries:
// only this file carries coverage; libtorch and libtrainscope_train are
// Debian's and gcc's binaries, watched by ASan's allocator and interceptors
// only.
//
// TRAINSCOPE_FUZZ_CRAFTED=1 recomputes the archive's CRC-32s after every
// mutation, so that inputs pass trainscope's zip check and reach libtorch's
// parsers the way a deliberately crafted file would (a campaign of its own:
// what it finds is libtorch's, docs/reliability.md).
#include <torch/torch.h>

#include <cstdlib>

#include "../fuzz/fuzz_common.h"
#include "tiny_model.h"
#include "trainscope/checkpoint/checkpoint.h"

namespace {

bool crafted = false;

// Writes each entry's CRC-32 into its central directory header.
void fix_crcs(uint8_t* data, size_t size) {
  const std::string_view archive(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& e : trainscope::checkpoint::zip_entries(archive)) {
      const auto crc = trainscope::checkpoint::zip_content_crc(archive, e);
      if (!crc || e.header + 20 > size) continue;
      for (int i = 0; i < 4; ++i) data[e.header + 16 + i] = static_cast<uint8_t>(*crc >> (8 * i));
    }
  } catch (const std::exception&) {  // no directory to fix
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int /*seed*/) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (crafted) fix_crcs(data, size);
  return size;
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  torch::set_num_threads(1);  // the campaign runs one worker on a shared machine
  const char* c = std::getenv("TRAINSCOPE_FUZZ_CRAFTED");
  crafted = c != nullptr && std::string_view(c) == "1";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  static const fuzz::Tiny tiny = fuzz::make_tiny();
  // A fresh optimizer per input: a refused checkpoint may leave its state
  // half-read (the model and the generator are untouched then).
  auto opt = tiny.optimizer();
  at::Generator gen = tiny.dropout_gen;  // the model's own, as in a resumed run
  bool loaded = false;
  fuzz::expect_clean([&] {
    (void)checkpoint::read_checkpoint(reinterpret_cast<const char*>(data), size, "fuzz.pt",
                                      *tiny.model, opt.get(), &gen);
    loaded = true;
  });
  if (loaded) tiny.step(*opt);  // what was accepted must train: any exception here is a finding
  return 0;
}
