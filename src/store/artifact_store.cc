#include "trainscope/store/artifact_store.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::store {
using core::ErrorKind;
using core::fail;

namespace {

// A run's folder is named by its UUID as the store holds it, and a store
// may have been written elsewhere (a shared PostgreSQL server): a UUID or
// an artifact name that would leave the artifact folder ("../..",
// "/etc/passwd") is refused before any file is read, served or removed.
std::string inside(std::string part, bool is_uuid) {
  const fs::path p(part);
  bool ok = !part.empty() && part.size() <= 4096 && !p.is_absolute();
  for (const auto& e : p) ok = ok && e != ".." && e != ".";
  if (is_uuid)
    ok =
        ok && part.size() <= 64 && part.find_first_not_of("0123456789abcdef-") == std::string::npos;
  if (!ok)
    fail(ErrorKind::kStore,
         "the store names {} '{}' that would leave the artifact folder; it was not written by "
         "trainscope and is not used",
         is_uuid ? "a run" : "an artifact", core::escape_cut(part, 120));
  return part;
}

class FolderArtifactStore final : public ArtifactStore {
 public:
  explicit FolderArtifactStore(fs::path root) : root_(std::move(root)) {
    // No -o of this process writes over a recorded file (a checkpoint).
    core::protect_from_output(root_, "inside the artifact folder of a store this command opened");
  }

  std::string describe() const override { return root_.string(); }

  fs::path path(std::string_view run_uuid, std::string_view name) const override {
    return root_ / inside(std::string(run_uuid), true) / inside(std::string(name), false);
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
    fs::remove_all(root_ / inside(std::string(run_uuid), true), ec);
    if (ec)
      fail(ErrorKind::kStore, "cannot remove '{}': {}", (root_ / std::string(run_uuid)).string(),
           ec.message());
  }

 private:
  fs::path root_;
};

}  // namespace

std::string folder_safe_uuid(std::string_view uuid) { return inside(std::string(uuid), true); }

StoredFile ArtifactStore::put(std::string_view run_uuid, std::string_view name,
                              const fs::path& file) {
  // A FIFO or a device is refused, never waited on or copied without end.
  const int fd = core::open_regular_file(file, "artifact");
  if (fd < 0)
    fail(ErrorKind::kNotFound, "cannot read artifact '{}': {}", file.string(),
         std::strerror(errno));
  StagedFile staged;
  try {
    staged = stage(run_uuid, name, [&](std::ostream& out) {
      std::array<char, 1 << 16> buf{};
      for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(ErrorKind::kRuntime, "error while reading '{}'", file.string());
        out.write(buf.data(), n);
      }
    });
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return commit(staged);
}

std::unique_ptr<ArtifactStore> make_folder_artifact_store(fs::path root) {
  return std::make_unique<FolderArtifactStore>(std::move(root));
}

}  // namespace trainscope::store
