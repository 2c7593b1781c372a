// The parts of a checkpoint that libtorch parses as a language, checked
// before it does: the TorchScript class definitions (its code/*.py entries)
// and the pickles. Private to the checkpoint component.
//
// A checkpoint written by write_checkpoint() holds one class per module as
// plain attribute declarations ("weight : Tensor", "fc1 :
// __torch__.___torch_mangle_4.Module"). libtorch 1.13 compiles whatever it
// finds there and crashes on some crafted text, and its unpickler trusts the
// lengths and sizes a pickle states (docs/reliability.md), so anything beyond
// those forms is refused before it is parsed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainscope::checkpoint {

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

// nullopt when `pickle` (an entry "<root>/NAME.pkl" or a debug pickle) is
// well formed the way libtorch 1.13's unpickler reads it: only the opcodes
// its pickler writes, every length within the bytes, no value taken from
// below a mark or from an empty stack, every memo fetched defined, one value
// at its end; and every storage it names holds exactly the elements it
// claims in its record (`records`: entry name -> size; storages are
// "<record_dir><key>"). Otherwise what is not (one line). libtorch itself
// trusts all of these.
std::optional<std::string> unexpected_pickle(std::string_view pickle,
                                             const std::map<std::string, uint64_t>& records,
                                             const std::string& record_dir);

// nullopt when `archive` passes the checks read_checkpoint makes before
// libtorch parses it (its zip structure, sizes and CRC-32s, its code and
// pickles as above); otherwise what does not (one line). For the other
// archives libtorch reads: state dicts saved by torch.save (state_dict.h).
std::optional<std::string> archive_problem(std::string_view archive);

}  // namespace trainscope::checkpoint
