#include "trainscope/train/dataset_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>

#include "trainscope/core/log.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::train {

namespace {

constexpr char kMagic[16] = "trainscope-ds-1";

// An entry: this header, the pixels (uint8, N x C x H x W), the labels
// (int64, N).
struct Header {
  char magic[16];
  char sources[64];  // hex SHA-256 of the files' identities (sources_of)
  int64_t n, channels, height, width, classes;
  uint32_t adler;  // of the pixels, then the labels
  uint32_t reserved;
};

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

uint32_t checksum(const Dataset& d) {
  uLong a = adler32_z(0L, Z_NULL, 0);
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

std::optional<Dataset> read_entry(const fs::path& file, const std::string& sources) {
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Header h{};
  struct stat st {};
  std::optional<int64_t> pixels;
  bool ok = read_exact(fd, &h, sizeof h) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
            std::string_view(h.sources, sizeof h.sources) == sources && (pixels = pixels_of(h)) &&
            fstat(fd, &st) == 0 && st.st_size == static_cast<off_t>(sizeof h) + *pixels + h.n * 8;
  Dataset d;
  if (ok) {
    d.images = torch::empty({h.n, h.channels, h.height, h.width}, torch::kUInt8);
    d.labels = torch::empty({h.n}, torch::kInt64);
    d.classes = h.classes;
    ok = read_exact(fd, d.images.data_ptr(), static_cast<size_t>(*pixels)) &&
         read_exact(fd, d.labels.data_ptr(), static_cast<size_t>(h.n) * 8) &&
         checksum(d) == h.adler;
  }
  close(fd);
  return ok ? std::optional<Dataset>(std::move(d)) : std::nullopt;
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
  h.adler = checksum(d);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  core::write_file_atomically(file, [&](std::ostream& o) {
    o.write(reinterpret_cast<const char*>(&h), sizeof h);
    o.write(static_cast<const char*>(d.images.data_ptr()), d.images.numel());
    o.write(static_cast<const char*>(d.labels.data_ptr()), d.labels.numel() * 8);
  });
}

}  // namespace

fs::path dataset_cache_entry(const std::vector<fs::path>& files) {
  const fs::path dir = core::user_cache_dir();
  if (dir.empty() || cache_off()) return {};
  std::string names;
  for (const auto& f : files) names += fs::absolute(f).string() + "\n";
  return dir / "datasets" / (core::sha256_hex(names).substr(0, 32) + ".bin");
}

Dataset cached_dataset(const std::vector<fs::path>& files, const std::function<Dataset()>& decode) {
  const fs::path entry = dataset_cache_entry(files);
  const std::string sources = entry.empty() ? "" : sources_of(files);
  if (sources.empty()) return decode();
  if (auto d = read_entry(entry, sources)) return std::move(*d);
  Dataset d = decode();
  try {
    write_entry(entry, sources, d);
  } catch (const std::exception& e) {
    core::log_debug("dataset cache: not written ({})", e.what());
  }
  return d;
}

}  // namespace trainscope::train
