// Where artifact files live. The Store records which artifacts a run has;
// an ArtifactStore keeps their bytes. The seam lets a database backend keep
// its rows in one place and the files in another (a folder beside an SQLite
// file, a shared folder beside a PostgreSQL server).
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
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

// A file written under a temporary name beside its final place, hashed as
// it was written and synced; commit() or discard() it.
struct StagedFile {
  StoredFile file;  // path: the temporary file
  std::filesystem::path destination;
};

// Where a Store keeps artifact files; the Store owns it. Implementations
// are safe for concurrent use (the folder store is).
class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;
  // Where the files live, for messages.
  virtual std::string describe() const = 0;
  // Writes (run, name) through `body` into a temporary file in its final
  // folder, hashing and syncing it in the same pass (no copy, no second
  // read). `name` has been checked to be a relative path without '.' or
  // '..'. Throws Error(kStore) when it cannot be written (nothing is left
  // behind).
  virtual StagedFile stage(std::string_view run_uuid, std::string_view name,
                           const std::function<void(std::ostream&)>& body) = 0;
  // Renames a staged file into place (replacing what was there) so that a
  // reader never sees half a file, and syncs the folder.
  virtual StoredFile commit(const StagedFile& staged) = 0;
  // Removes a staged file that will not be committed; never throws.
  virtual void discard(const StagedFile& staged) = 0;
  // Copies `file` to (run, name): stage() then commit(). Throws
  // Error(kNotFound) when `file` cannot be read.
  StoredFile put(std::string_view run_uuid, std::string_view name,
                 const std::filesystem::path& file);
  // Where the stored copy of (run, name) is, whether or not it exists.
  virtual std::filesystem::path path(std::string_view run_uuid, std::string_view name) const = 0;
  // Removes every file of a run; a run without files is not an error.
  virtual void remove_run(std::string_view run_uuid) = 0;
};

// Files under `root`/<run uuid>/<name>. Thread-safe; several processes may
// share one root.
std::unique_ptr<ArtifactStore> make_folder_artifact_store(std::filesystem::path root);

// `uuid` as the store holds it, when it may name a file or folder: hex
// digits and '-' only, at most 64 bytes. Throws Error(kStore), one line,
// for any other (a store written by something else: "../..").
std::string folder_safe_uuid(std::string_view uuid);

}  // namespace trainscope::store
