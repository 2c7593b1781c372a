// read_checkpoint() from bytes: libtorch's zip, pickle and TorchScript reader
// under trainscope's checks. Each input is a would-be checkpoint of the tiny
// model (tiny_model.h). It loads, and then one training step on it must run,
// or read_checkpoint throws core::Error with one line. Built by clang with
// libFuzzer + ASan + UBSan against the Release build's gcc-built libraries:
// only this file carries coverage; libtorch and libtrainscope_train are
// Debian's and gcc's binaries, watched by ASan's allocator and interceptors
// only.
#include <torch/torch.h>

#include "../fuzz/fuzz_common.h"
#include "checkpoint.h"
#include "tiny_model.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  torch::set_num_threads(1);  // the campaign runs one worker on a shared machine
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
    (void)train::read_checkpoint(reinterpret_cast<const char*>(data), size, "fuzz.pt",
                                 *tiny.model, opt.get(), &gen);
    loaded = true;
  });
  if (loaded) tiny.step(*opt);  // what was accepted must train: any exception here is a finding
  return 0;
}
