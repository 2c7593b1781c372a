// The bytes of dataset files, checked and unpacked without libtorch: IDX
// (MNIST, Fashion-MNIST) and CIFAR-10/100 binary batches. data.h turns them
// into tensors; the fuzzers (tests/fuzz) feed them arbitrary bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::data {

// Images as uint8 [n, channels, height, width] in `pixels`, one label each.
struct RawImages {
  int64_t n = 0, channels = 1, height = 0, width = 0;
  std::string pixels;
  std::vector<uint8_t> labels;
};

// An IDX image file and its label file (already un-gzipped). Throws
// Error(kUsage) naming the file (`images_name`, `labels_name`) and what is
// wrong: the magic numbers, an implausible size, a truncated or padded
// file, image and label counts that differ.
RawImages parse_idx(std::string_view images, std::string_view labels,
                    const std::string& images_name, const std::string& labels_name);

// Appends the records of one CIFAR binary batch (un-gzipped) to `into`
// (3x32x32). A record holds 1 label byte (CIFAR-10) or 2 (CIFAR-100: coarse,
// fine; the fine label is kept). Throws Error(kUsage) naming `name` when the
// size is not a whole number of records or a label is out of range.
void parse_cifar(std::string_view bytes, bool cifar100, const std::string& name, RawImages& into);

}  // namespace trainscope::data
