// Loads the torch half of the CLI on first use (see torch_commands.h).
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include "torch_commands.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"

namespace fs = std::filesystem;

namespace trainscope::cli {

namespace {

constexpr const char* kLibrary = "libtrainscope_torch_commands.so";

// Beside the executable's lib/ folder, in the build tree (bin/ and
// lib/trainscope/) as installed (bin/ and lib/trainscope/);
// $TRAINSCOPE_TORCH_COMMANDS names another file.
fs::path library_path() {
  if (const char* p = std::getenv("TRAINSCOPE_TORCH_COMMANDS"); p && *p) return p;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "lib" / "trainscope" / kLibrary;
}

TorchCommands* load(bool required) {
  const fs::path path = library_path();
  if (!required && !fs::exists(path)) return nullptr;
  // libtorch's c10d logs through glog to stderr (a rank that cannot reach
  // its rendezvous, a peer that closed its socket): trainscope says what
  // failed in its own line, so glog speaks only with -v. glog reads the
  // variable when libtorch loads.
  if (core::verbosity() < core::Verbosity::kVerbose) setenv("GLOG_minloglevel", "3", 0);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    core::fail(core::ErrorKind::kRuntime,
               "this command needs libtorch, but the torch half of trainscope did not load "
               "({}); build trainscope with TRAINSCOPE_WITH_TORCH=ON or set "
               "TRAINSCOPE_TORCH_COMMANDS to the library",
               dlerror());
  auto entry =
      reinterpret_cast<TorchCommandsEntry>(dlsym(handle, TRAINSCOPE_TORCH_COMMANDS_SYMBOL));
  if (!entry)
    core::fail(core::ErrorKind::kRuntime,
               "'{}' is not the torch half of this trainscope (no {}); reinstall trainscope",
               path.string(), TRAINSCOPE_TORCH_COMMANDS_SYMBOL);
  // Never unloaded: libtorch does not support it.
  return entry();
}

}  // namespace

TorchCommands& torch_commands() {
  static TorchCommands* commands = load(/*required=*/true);
  return *commands;
}

TorchCommands* torch_commands_if_present() {
  static TorchCommands* commands = load(/*required=*/false);
  return commands;
}

}  // namespace trainscope::cli
