#include "trainscope/data/dataset_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>

#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::data {

namespace {

// Version 2: the Adler-32 covers the header too (version 1's covered the
// pixels and labels only: one flipped bit in `classes` trained a 522-class
// model), and the header says in which byte order it was written. Entries
// of version 1 are decoded again and replaced, never trusted.
constexpr char kMagic[16] = "trainscope-ds-2";
constexpr uint32_t kByteOrder = 0x01020304;  // as this machine stores it

// An entry: this header, the pixels (uint8, N x C x H x W), the labels
// (int64, N), all in this machine's byte order.
struct Header {
  char magic[16];
  char sources[64];  // hex SHA-256 of the files' identities (sources_of)
  int64_t n, channels, height, width, classes;
  uint32_t adler;       // of this header (with adler 0), the pixels, then the labels
  uint32_t byte_order;  // kByteOrder: an entry from a machine of the other byte order differs
};
static_assert(sizeof(Header) == 128, "no padding: every byte of the header is checksummed");

bool cache_off() {
  const char* v = std::getenv("TRAINSCOPE_DATASET_CACHE");
  return v && (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0);
}

// What identifies the files' content now: each one's path, device, inode,
// size, modification and change times (the kernel sets the change time on
// every write). Empty when one cannot be stat'ed, or was modified in the
// last seconds: file times tick coarsely, so a write right after could
// leave them as they are (git's "racily clean" files).
std::string sources_of(const std::vector<fs::path>& files) {
  std::string id = "v1";
  const double settled = core::unix_now() - 2;
  for (const auto& f : files) {
    struct stat st {};
    if (stat(f.c_str(), &st) != 0) return {};
    if (static_cast<double>(st.st_mtim.tv_sec) >= settled) return {};
    id += fmt::format("\n{}\t{}\t{}\t{}\t{}.{}\t{}.{}", fs::absolute(f).string(), st.st_dev,
                      st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                      st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  }
  return core::sha256_hex(id);
}

uint32_t checksum(Header h, const Dataset& d) {
  h.adler = 0;
  uLong a = adler32_z(0L, Z_NULL, 0);
  a = adler32_z(a, reinterpret_cast<const Bytef*>(&h), sizeof h);
  a = adler32_z(a, static_cast<const Bytef*>(d.images.data_ptr()),
                static_cast<size_t>(d.images.numel()));
  a = adler32_z(a, static_cast<const Bytef*>(d.labels.data_ptr()),
                static_cast<size_t>(d.labels.numel()) * sizeof(int64_t));
  return static_cast<uint32_t>(a);
}

bool read_exact(int fd, void* out, size_t size) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The pixel count a header announces, when plausible.
std::optional<int64_t> pixels_of(const Header& h) {
  if (h.n < 0 || h.n > (int64_t{1} << 32) || h.channels < 1 || h.channels > 64 || h.height < 1 ||
      h.height > 4096 || h.width < 1 || h.width > 4096)
    return std::nullopt;
  return h.n * h.channels * h.height * h.width;
}

// Whether an entry's header and labels agree with what its files say of
// their dataset (`expected`, from their headers); why not, for the log.
std::string disagreement(const Header& h, const Dataset& d, const DatasetShape& expected) {
  const auto differs = [](int64_t want, int64_t have) { return want >= 0 && want != have; };
  if (differs(expected.n, h.n) || differs(expected.channels, h.channels) ||
      differs(expected.height, h.height) || differs(expected.width, h.width))
    return fmt::format("it holds {}x{}x{}x{} images, the files {}x{}x{}x{}", h.n, h.channels,
                       h.height, h.width, expected.n, expected.channels, expected.height,
                       expected.width);
  const int64_t* label = d.labels.data_ptr<int64_t>();
  int64_t lo = 0, hi = -1;
  if (h.n > 0) lo = hi = label[0];
  for (int64_t i = 1; i < h.n; ++i) lo = std::min(lo, label[i]), hi = std::max(hi, label[i]);
  const int64_t classes = expected.classes >= 0 ? expected.classes : hi + 1;
  if (h.classes != classes || lo < 0 || hi >= h.classes)
    return fmt::format("it says {} classes, its labels are {}..{}, the files' classes {}",
                       h.classes, lo, hi, classes);
  return {};
}

// The entry when it is whole, for these files (`sources`) and agrees with
// what they say (`expected`); std::nullopt otherwise.
std::optional<Dataset> read_entry(const fs::path& file, const std::string& sources,
                                  const DatasetShape& expected) {
  const int fd = core::open_regular_file(file, "dataset cache entry");  // a FIFO: refused
  if (fd < 0) return std::nullopt;
  Header h{};
  struct stat st {};
  std::optional<int64_t> pixels;
  bool ok = read_exact(fd, &h, sizeof h) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
            h.byte_order == kByteOrder &&
            std::string_view(h.sources, sizeof h.sources) == sources && (pixels = pixels_of(h)) &&
            fstat(fd, &st) == 0 && st.st_size == static_cast<off_t>(sizeof h) + *pixels + h.n * 8;
  Dataset d;
  if (ok) {
    d.images = torch::empty({h.n, h.channels, h.height, h.width}, torch::kUInt8);
    d.labels = torch::empty({h.n}, torch::kInt64);
    d.classes = h.classes;
    ok = read_exact(fd, d.images.data_ptr(), static_cast<size_t>(*pixels)) &&
         read_exact(fd, d.labels.data_ptr(), static_cast<size_t>(h.n) * 8) &&
         checksum(h, d) == h.adler;
  }
  close(fd);
  if (!ok) return std::nullopt;
  if (const std::string why = disagreement(h, d, expected); !why.empty()) {
    core::log_debug("dataset cache: entry '{}' not used: {}", file.string(), why);
    return std::nullopt;
  }
  return d;
}

void write_entry(const fs::path& file, const std::string& sources, const Dataset& d) {
  if (d.images.scalar_type() != torch::kUInt8 || d.images.dim() != 4 || !d.images.is_contiguous() ||
      d.labels.scalar_type() != torch::kInt64 || !d.labels.is_contiguous())
    return;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  std::memcpy(h.sources, sources.data(), sizeof h.sources);
  h.n = d.images.size(0), h.channels = d.images.size(1);
  h.height = d.images.size(2), h.width = d.images.size(3);
  h.classes = d.classes;
  h.byte_order = kByteOrder;
  h.adler = checksum(h, d);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  core::write_file_atomically(file, [&](std::ostream& o) {
    o.write(reinterpret_cast<const char*>(&h), sizeof h);
    o.write(static_cast<const char*>(d.images.data_ptr()), d.images.numel());
    o.write(static_cast<const char*>(d.labels.data_ptr()), d.labels.numel() * 8);
  });
}

// Whether the entry's path holds something other than a regular file (a
// FIFO would block open() forever, and the write of a new entry): said
// once, and then the entry is neither read nor written.
bool foreign_entry(const fs::path& entry) {
  struct stat st {};
  if (stat(entry.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return false;
  core::log_warn(
      "dataset cache entry '{}' is {}, not a file: the dataset is decoded without the cache; "
      "remove it",
      core::escape_for_display(entry.string()), core::file_kind(st.st_mode));
  return true;
}

}  // namespace

fs::path dataset_cache_entry(const std::vector<fs::path>& files) {
  const fs::path dir = core::user_cache_dir();
  if (dir.empty() || cache_off()) return {};
  std::string names;
  for (const auto& f : files) names += fs::absolute(f).string() + "\n";
  return dir / "datasets" / (core::sha256_hex(names).substr(0, 32) + ".bin");
}

Dataset cached_dataset(const std::vector<fs::path>& files, const std::function<Dataset()>& decode,
                       const DatasetShape& expected) {
  const fs::path entry = dataset_cache_entry(files);
  const std::string sources = entry.empty() ? "" : sources_of(files);
  if (sources.empty() || foreign_entry(entry)) return decode();
  try {
    if (auto d = read_entry(entry, sources, expected)) return std::move(*d);
  } catch (const core::Error& e) {  // it became a FIFO since foreign_entry looked
    core::log_warn("{}", e.what());
    return decode();
  }
  Dataset d = decode();
  try {
    write_entry(entry, sources, d);
  } catch (const std::exception& e) {
    core::log_debug("dataset cache: not written ({})", e.what());
  }
  return d;
}

}  // namespace trainscope::data
