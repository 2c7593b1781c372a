// Checkpoint files: model, optimizer, dropout generator and loop position,
// everything a run needs to continue exactly; read by the study's weight
// spread too.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/instrument/events.h"
#include "trainscope/models/models.h"
#include "trainscope/optim/optim.h"
#include "trainscope/store/store.h"

namespace trainscope::checkpoint {

// Artifact kind of checkpoints.
constexpr const char* kCheckpointKind = "checkpoint";

// "checkpoints/step-000000469.pt": names sort by step.
std::string checkpoint_name(int64_t step);

// Writes a checkpoint into `out` (the store's artifact writer: one pass,
// hashed and synced as it goes).
void write_checkpoint(std::ostream& out, models::Classifier& model, optim::Optimizer& opt,
                      const at::Generator& dropout_gen, const instrument::TrainPosition& pos);

// Loads `path` into the model and, when given, the optimizer and the
// generator; returns the position it was written at. Throws Error(kStore)
// naming the file when it is not a readable checkpoint of this model: libtorch's
// own errors, a missing entry, or a tensor whose dtype, shape or device differs
// from the model's (or that addresses memory outside its storage). The model
// and the generator change only when everything was read; on an error the
// optimizer's state is unspecified (callers stop).
instrument::TrainPosition read_checkpoint(const std::filesystem::path& path,
                                          models::Classifier& model, optim::Optimizer* opt,
                                          at::Generator* dropout_gen);

// The same from a checkpoint's bytes in memory (a fuzzer's input); `name`
// stands for the file in messages.
instrument::TrainPosition read_checkpoint(const char* data, size_t size, const std::string& name,
                                          models::Classifier& model, optim::Optimizer* opt,
                                          at::Generator* dropout_gen);

// One entry of a checkpoint's zip archive, located as libtorch's zip reader
// (miniz) locates it.
struct ZipEntry {
  std::string name;
  uint64_t header = 0;  // offset of its central directory header (the CRC-32 is at +16)
  uint32_t crc32 = 0;   // as the central directory records it
  uint64_t method = 0;  // 0 stored, 8 deflated
  uint64_t data = 0;    // offset of its bytes in the archive
  uint64_t stored_size = 0, size = 0;  // of its bytes there, and of its content
};

// The entries of a zip archive as miniz reads them; throws std::runtime_error
// saying what is inconsistent, or when miniz would hand libtorch an entry's
// buffer without filling it.
std::vector<ZipEntry> zip_entries(std::string_view archive);

// An entry's content (inflated when deflated); nullopt when its bytes do not
// make exactly `size` bytes the way miniz would read them.
std::optional<std::string> zip_content(std::string_view archive, const ZipEntry& e);

// The CRC-32 of an entry's content; nullopt where zip_content() has none.
std::optional<uint32_t> zip_content_crc(std::string_view archive, const ZipEntry& e);

// The newest checkpoint artifact of a run, or the one named `name`
// ("step-000000469.pt" or "checkpoints/step-000000469.pt").
std::optional<store::ArtifactInfo> find_checkpoint(store::Store& store, const std::string& uuid,
                                                   const std::string& name = {});

// find_checkpoint, or Error(kNotFound) naming the run and the checkpoints
// it has.
store::ArtifactInfo require_checkpoint(store::Store& store, const store::RunInfo& run,
                                       const std::string& name = {});

}  // namespace trainscope::checkpoint
