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

class FolderArtifactStore final : public ArtifactStore {
 public:
  explicit FolderArtifactStore(fs::path root) : root_(std::move(root)) {}

  std::string describe() const override { return root_.string(); }

  fs::path path(std::string_view run_uuid, std::string_view name) const override {
    return root_ / std::string(run_uuid) / std::string(name);
  }

  StagedFile stage(std::string_view run_uuid, std::string_view name,
                   const std::function<void(std::ostream&)>& body) override {
    StagedFile staged;
    staged.destination = path(run_uuid, name);
    std::error_code ec;
    fs::create_directories(staged.destination.parent_path(), ec);
    if (ec)
      fail(ErrorKind::kStore, "cannot create artifact folder '{}': {}",
           staged.destination.parent_path().string(), ec.message());
    // A temporary name in the same folder: the rename is atomic and a kill
    // never leaves a half file under the final name.
    staged.file.path = staged.destination;
    staged.file.path += ".tmp-" + core::new_uuid().substr(0, 8);
    try {
      core::WrittenFile w = core::write_synced_file(staged.file.path, body);
      staged.file.sha256 = w.sha256;
      staged.file.size = w.size;
    } catch (const core::Error& e) {
      fs::remove(staged.file.path, ec);
      if (e.kind() != ErrorKind::kStore) throw;
      // Name the artifact, not its temporary file.
      const std::string what = e.what();
      fail(ErrorKind::kStore, "cannot store artifact '{}': {}", staged.destination.string(),
           what.substr(what.rfind(": ") + 2));
    } catch (...) {
      fs::remove(staged.file.path, ec);
      throw;
    }
    return staged;
  }

  StoredFile commit(const StagedFile& staged) override {
    std::error_code ec;
    fs::rename(staged.file.path, staged.destination, ec);
    if (ec) {
      discard(staged);
      fail(ErrorKind::kStore, "cannot move artifact into '{}': {}", staged.destination.string(),
           ec.message());
    }
    core::sync_directory(staged.destination.parent_path());
    StoredFile out = staged.file;
    out.path = staged.destination;
    return out;
  }

  void discard(const StagedFile& staged) override {
    std::error_code ec;
    fs::remove(staged.file.path, ec);
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

StoredFile ArtifactStore::put(std::string_view run_uuid, std::string_view name,
                              const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(ErrorKind::kNotFound, "cannot read artifact '{}': {}", file.string(),
         std::strerror(errno));
  StagedFile staged = stage(run_uuid, name, [&](std::ostream& out) {
    std::array<char, 1 << 16> buf{};
    while (in) {
      in.read(buf.data(), buf.size());
      out.write(buf.data(), in.gcount());
    }
    if (in.bad()) fail(ErrorKind::kRuntime, "error while reading '{}'", file.string());
  });
  return commit(staged);
}

std::unique_ptr<ArtifactStore> make_folder_artifact_store(fs::path root) {
  return std::make_unique<FolderArtifactStore>(std::move(root));
}

}  // namespace trainscope::store
