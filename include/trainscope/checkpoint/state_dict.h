// PyTorch state dicts: the files `torch.save(model.state_dict(), path)`
// writes in Python and `torch.load(path)` reads, exchanged with trainscope's
// models, whose parameters and buffers carry the names a PyTorch model of the
// same structure gives them (TrainerInputs, examples/python/demo_cnn.py).
// A training starts from one with `model.init_from`; `trainscope weights`
// writes a run's checkpoint as one.
#pragma once

#include <filesystem>

#include "trainscope/models/models.h"
#include "trainscope/store/store.h"

namespace trainscope::checkpoint {

// Writes the model's parameters and buffers, by name and in the model's
// order, as torch.save writes a state dict (a zip archive whose pickle is a
// dict of tensors, read by torch.load in Python and by read_state_dict).
// `path` "-" writes it to stdout, as every `-o -` does (a stdout that
// fails is said once at the end, core/output.h). Throws Error(kStore)
// naming the file when it cannot be written.
void write_state_dict(const std::filesystem::path& path, models::Classifier& model);

// Copies a state dict saved by torch.save (or write_state_dict) into the
// model: it must hold every parameter and buffer of the model, each with the
// model's dtype and shape, and nothing else. Throws Error(kUsage) naming the
// file and the first name that differs or is missing or left over, or saying
// that it is not a state dict (a whole pickled model, a checkpoint of
// trainscope's, another file); the model changes only when all of it matched.
// Reads untrusted bytes: the zip is checked as a checkpoint's is, and its
// pickle is read by trainscope's own machine (libtorch's unpickler never
// sees it), which calls nothing but what a state dict needs.
void read_state_dict(const std::filesystem::path& path, models::Classifier& model);

// A run's checkpoint (`checkpoint`: its name, "" the newest) as a state
// dict at `out`, loaded into the model the run's recorded config builds;
// returns the checkpoint's name (`out` "-": stdout). Error(kNotFound) when
// the run has no such checkpoint, Error(kUsage) when it was not recorded by
// the trainer, Error(kStore) when its config does not match the SHA-256
// recorded with it (store::verify_config).
std::string export_state_dict(store::Store& store, const store::RunInfo& run,
                              const std::string& checkpoint, const std::filesystem::path& out);

}  // namespace trainscope::checkpoint
