// Checkpoint files: model, optimizer, dropout generator and loop position,
// everything a run needs to continue exactly. Private to the train component.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "trainscope/store/store.h"
#include "trainscope/train/events.h"

namespace trainscope::train {

// Artifact kind of checkpoints.
constexpr const char* kCheckpointKind = "checkpoint";

// "checkpoints/step-000000469.pt": names sort by step.
std::string checkpoint_name(int64_t step);

// Writes a checkpoint into `out` (the store's artifact writer: one pass,
// hashed and synced as it goes).
void write_checkpoint(std::ostream& out, Classifier& model, Optimizer& opt,
                      const at::Generator& dropout_gen, const TrainPosition& pos);

// Loads `path` into the model and, when given, the optimizer and the
// generator; returns the position it was written at. Throws Error(kStore)
// naming the file when it is not a readable checkpoint of this model: libtorch's
// own errors, a missing entry, or a tensor whose dtype, shape or device differs
// from the model's (or that addresses memory outside its storage). The model
// and the generator change only when everything was read; on an error the
// optimizer's state is unspecified (callers stop).
TrainPosition read_checkpoint(const std::filesystem::path& path, Classifier& model, Optimizer* opt,
                              at::Generator* dropout_gen);

// The same from a checkpoint's bytes in memory (a fuzzer's input); `name`
// stands for the file in messages.
TrainPosition read_checkpoint(const char* data, size_t size, const std::string& name,
                              Classifier& model, Optimizer* opt, at::Generator* dropout_gen);

// The newest checkpoint artifact of a run, or the one named `name`
// ("step-000000469.pt" or "checkpoints/step-000000469.pt").
std::optional<store::ArtifactInfo> find_checkpoint(store::Store& store, const std::string& uuid,
                                                   const std::string& name = {});

}  // namespace trainscope::train
