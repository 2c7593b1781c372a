// unpickle_state_dict(): the pickle of a state dict saved by torch.save, read
// by trainscope's own machine (src/checkpoint/state_dict_pickle.cc) from outside
// bytes. Each input is a would-be data.pkl; a storage it names holds the
// bytes it claims (up to 1 MiB; more, and the sizes differ), so that views
// and offsets are checked against real storages. It returns tensors, or
// throws std::runtime_error with one line ("it ...").
// Built like checkpoint_fuzz (clang, libFuzzer + ASan + UBSan, this file and
// state_dict_pickle.cc instrumented, libtorch as it is).
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "state_dict_pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view pickle(reinterpret_cast<const char*>(data), size);
  const auto storage = [](const std::string&, size_t claimed) {
    return std::string(std::min<size_t>(claimed, size_t{1} << 20), '\x3f');
  };
  try {
    for (const auto& [name, t] : trainscope::checkpoint::unpickle_state_dict(pickle, storage))
      (void)t.sum().item<double>();  // every element it addresses is readable
  } catch (const std::runtime_error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) {
      std::fprintf(stderr, "error message of more than one line:\n%s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
