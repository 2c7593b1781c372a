// Torch-free checks and unpacking of IDX and CIFAR bytes (dataset_files.h).
#include "trainscope/data/dataset_files.h"

#include "trainscope/core/error.h"

namespace trainscope::data {
using core::ErrorKind;
using core::fail;

namespace {

uint32_t be32(std::string_view s, size_t off) {
  auto b = reinterpret_cast<const unsigned char*>(s.data()) + off;
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

}  // namespace

RawImages parse_idx(std::string_view img, std::string_view lab, const std::string& images_name,
                    const std::string& labels_name) {
  const char* expect =
      "expected IDX format (magic 0x00000803 for images, 0x00000801 for labels, big-endian)";
  if (img.size() < 16 || be32(img, 0) != 0x00000803)
    fail(ErrorKind::kUsage, "'{}' is not an IDX image file; {}", images_name, expect);
  if (lab.size() < 8 || be32(lab, 0) != 0x00000801)
    fail(ErrorKind::kUsage, "'{}' is not an IDX label file; {}", labels_name, expect);
  RawImages r;
  r.n = be32(img, 4), r.height = be32(img, 8), r.width = be32(img, 12);
  if (r.height <= 0 || r.width <= 0 || r.height > 4096 || r.width > 4096)
    fail(ErrorKind::kUsage, "'{}': implausible image size {}x{}", images_name, r.height, r.width);
  const int64_t bytes = 16 + r.n * r.height * r.width;
  if (static_cast<int64_t>(img.size()) != bytes)
    fail(ErrorKind::kUsage,
         "'{}' is truncated or padded: header says {} images of {}x{} ({} bytes) but the file has "
         "{}",
         images_name, r.n, r.height, r.width, bytes, img.size());
  const int64_t nl = be32(lab, 4);
  if (static_cast<int64_t>(lab.size()) != 8 + nl)
    fail(ErrorKind::kUsage, "'{}' is truncated: header says {} labels but the file has {} bytes",
         labels_name, nl, lab.size());
  if (nl != r.n)
    fail(ErrorKind::kUsage, "'{}' has {} images but '{}' has {} labels", images_name, r.n,
         labels_name, nl);
  r.pixels.assign(img.substr(16));
  r.labels.assign(lab.begin() + 8, lab.end());
  return r;
}

void parse_cifar(std::string_view c, bool cifar100, const std::string& name, RawImages& into) {
  const size_t label_bytes = cifar100 ? 2 : 1;
  const size_t record = label_bytes + 3 * 32 * 32;
  if (c.empty() || c.size() % record != 0)
    fail(ErrorKind::kUsage,
         "'{}' is not a CIFAR-{} binary batch: its size {} is not a multiple of {} bytes "
         "({} label byte(s) + 3072 pixels)",
         name, cifar100 ? 100 : 10, c.size(), record, label_bytes);
  into.channels = 3, into.height = 32, into.width = 32;
  for (size_t off = 0; off < c.size(); off += record) {
    const auto label = static_cast<unsigned char>(c[off + label_bytes - 1]);
    if (label >= (cifar100 ? 100 : 10))
      fail(ErrorKind::kUsage, "'{}': record {} has label {}, out of range; the file is corrupt",
           name, off / record, static_cast<int>(label));
    into.labels.push_back(label);
    into.pixels.append(c.substr(off + label_bytes, 3072));
    ++into.n;
  }
}

}  // namespace trainscope::data
