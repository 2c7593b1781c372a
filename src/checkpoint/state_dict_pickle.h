// The pickle of a state dict saved by torch.save, read without libtorch's
// unpickler (which refuses what Python writes for an OrderedDict). Private
// to the checkpoint component (state_dict.cc).
#pragma once

#include <torch/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainscope::checkpoint {

// The bytes of the storage named `key` (the archive's <root>/data/<key>);
// `claimed` is how many the pickle says it holds (checked against what comes
// back: a reader of a file ignores it, a fuzzer gives that many).
using StorageReader = std::function<std::string(const std::string& key, size_t claimed)>;

// The tensors of a state dict's data.pkl, by name in the file's order: a
// pickle of protocol 2 whose value is a dict (an OrderedDict, its _metadata
// ignored) of names to tensors rebuilt from storages (_rebuild_tensor_v2,
// _rebuild_parameter), each a copy. Only those globals are called, every
// opcode's operands and every view are checked against the bytes there;
// anything else throws std::runtime_error saying what (one line, "it ...").
std::vector<std::pair<std::string, torch::Tensor>> unpickle_state_dict(std::string_view pickle,
                                                                       StorageReader read);

// The data.pkl torch.save writes for these tensors (each contiguous, on the
// CPU): an OrderedDict of names to _rebuild_tensor_v2 of storage "k" for the
// k-th tensor, which torch.load reads with weights_only (its default).
std::string pickle_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& tensors);

}  // namespace trainscope::checkpoint
