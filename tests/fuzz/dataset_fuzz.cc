// IDX image + label files (split at the first NUL after 16 bytes would be
// too rare: the first byte picks the split) and CIFAR-10/100 batches.
#include "fuzz_common.h"
#include "trainscope/data/dataset_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainscope;
  if (size == 0) return 0;
  const std::string_view rest = fuzz::as_text(data + 1, size - 1);
  const size_t cut = std::min<size_t>(rest.size(), static_cast<size_t>(data[0]) * 4);
  fuzz::expect_clean([&] {
    auto r = data::parse_idx(rest.substr(0, cut), rest.substr(cut), "images", "labels");
    if (static_cast<int64_t>(r.pixels.size()) != r.n * r.height * r.width) std::abort();
    if (static_cast<int64_t>(r.labels.size()) != r.n) std::abort();
  });
  for (bool cifar100 : {false, true})
    fuzz::expect_clean([&] {
      data::RawImages r;
      data::parse_cifar(rest, cifar100, "batch.bin", r);
      if (static_cast<int64_t>(r.pixels.size()) != r.n * 3072) std::abort();
    });
  return 0;
}
