#include "trainscope/store/artifact_store.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::store {
using core::ErrorKind;
using core::fail;

namespace {

// Copies `in` to `out`; returns the bytes copied. Throws Error(kStore) when
// writing fails.
int64_t copy_stream(std::ifstream& in, const fs::path& dest) {
  std::ofstream out(dest, std::ios::binary | std::ios::trunc);
  if (!out)
    fail(ErrorKind::kStore, "cannot write artifact '{}': {}", dest.string(), std::strerror(errno));
  std::array<char, 1 << 16> buf{};
  int64_t size = 0;
  while (in) {
    in.read(buf.data(), buf.size());
    out.write(buf.data(), in.gcount());
    size += in.gcount();
  }
  out.flush();
  if (!out) fail(ErrorKind::kStore, "writing artifact '{}' failed (disk full?)", dest.string());
  return size;
}

class FolderArtifactStore final : public ArtifactStore {
 public:
  explicit FolderArtifactStore(fs::path root) : root_(std::move(root)) {}

  std::string describe() const override { return root_.string(); }

  fs::path path(std::string_view run_uuid, std::string_view name) const override {
    return root_ / std::string(run_uuid) / std::string(name);
  }

  StoredFile put(std::string_view run_uuid, std::string_view name, const fs::path& file) override {
    std::ifstream in(file, std::ios::binary);
    if (!in)
      fail(ErrorKind::kNotFound, "cannot read artifact '{}': {}", file.string(),
           std::strerror(errno));
    const fs::path dest = path(run_uuid, name);
    std::error_code ec;
    fs::create_directories(dest.parent_path(), ec);
    if (ec)
      fail(ErrorKind::kStore, "cannot create artifact folder '{}': {}", dest.parent_path().string(),
           ec.message());
    // A temporary name, then rename: a kill never leaves a half file under
    // the final name.
    fs::path tmp = dest;
    tmp += ".tmp-" + core::new_uuid().substr(0, 8);
    StoredFile out;
    try {
      out.size = copy_stream(in, tmp);
      out.sha256 = core::sha256_file(tmp);
    } catch (...) {
      fs::remove(tmp, ec);
      throw;
    }
    fs::rename(tmp, dest, ec);
    if (ec) {
      fs::remove(tmp, ec);
      fail(ErrorKind::kStore, "cannot move artifact into '{}': {}", dest.string(), ec.message());
    }
    out.path = dest;
    return out;
  }

  void remove_run(std::string_view run_uuid) override {
    std::error_code ec;
    fs::remove_all(root_ / std::string(run_uuid), ec);
    if (ec)
      fail(ErrorKind::kStore, "cannot remove '{}': {}", (root_ / std::string(run_uuid)).string(),
           ec.message());
  }

 private:
  fs::path root_;
};

}  // namespace

std::unique_ptr<ArtifactStore> make_folder_artifact_store(fs::path root) {
  return std::make_unique<FolderArtifactStore>(std::move(root));
}

}  // namespace trainscope::store
