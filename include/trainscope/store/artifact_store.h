// Where artifact files live. The Store records which artifacts a run has;
// an ArtifactStore keeps their bytes. The seam lets a database backend keep
// its rows in one place and the files in another (a folder beside an SQLite
// file, a shared folder beside a PostgreSQL server).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace trainscope::store {

// What put() stored.
struct StoredFile {
  std::string sha256;
  int64_t size = 0;
  std::filesystem::path path;  // where the stored copy can be read
};

class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  virtual std::string describe() const = 0;
  // Copies `file` to (run, name) so that a reader never sees a half-written
  // copy (temporary name, then rename), replacing what was there. `name`
  // has been checked to be a relative path without '.' or '..'. Throws
  // Error(kNotFound) when `file` cannot be read, Error(kStore) when the copy
  // cannot be written (the destination is then left as it was).
  virtual StoredFile put(std::string_view run_uuid, std::string_view name,
                         const std::filesystem::path& file) = 0;
  // Where the stored copy of (run, name) is, whether or not it exists.
  virtual std::filesystem::path path(std::string_view run_uuid, std::string_view name) const = 0;
  // Removes every file of a run; a run without files is not an error.
  virtual void remove_run(std::string_view run_uuid) = 0;
};

// Files under `root`/<run uuid>/<name>. Thread-safe; several processes may
// share one root.
std::unique_ptr<ArtifactStore> make_folder_artifact_store(std::filesystem::path root);

}  // namespace trainscope::store
