// The TorchScript class definitions inside a checkpoint (its code/*.py
// entries), checked before libtorch's type parser reads them. Private to the
// train component.
//
// A checkpoint written by write_checkpoint() holds one class per module as
// plain attribute declarations ("weight : Tensor", "fc1 :
// __torch__.___torch_mangle_4.Module"). libtorch 1.13 compiles whatever it
// finds there and crashes on some crafted text (docs/reliability.md), so
// anything beyond those forms is refused before it is parsed.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainscope::train {

// One entry of the archive's code/ folder: its name in the zip (whatever the
// archive's first folder is called) and its content.
struct CodeFile {
  std::string name, text;
};

// True for the entries libtorch reads as TorchScript source: "<any>/code/...py".
bool is_code_entry(const std::string& zip_name);

// nullopt when every file is one of the classes write_checkpoint() produces
// and their references to each other exist and form no cycle; otherwise what
// is not (one line).
std::optional<std::string> unexpected_code(const std::vector<CodeFile>& files);

}  // namespace trainscope::train
