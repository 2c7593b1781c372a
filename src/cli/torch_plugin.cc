// Loads the torch half of the CLI on first use (see torch_commands.h).
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "torch_commands.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"

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

#ifdef TRAINSCOPE_TORCH_BUILT_VERSION
// The torch package the torch half will load: site-packages/torch beside an
// installed trainscope (pip install .: site-packages/trainscope/lib/trainscope/),
// else the one it was built against.
fs::path torch_dir(const fs::path& library) {
  const fs::path beside = library.parent_path().parent_path().parent_path().parent_path() / "torch";
  std::error_code ec;
  if (fs::exists(beside / "version.py", ec)) return beside;
  return TRAINSCOPE_TORCH_BUILT_DIR;
}

// The torch half links the libtorch it was compiled against: beside another
// it would fail with an undefined symbol, or load and crash. One line
// instead, before it is loaded.
void check_torch(const fs::path& library) {
  const fs::path dir = torch_dir(library);
  std::ifstream in(dir / "version.py");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!in && text.empty())
    core::fail(core::ErrorKind::kRuntime,
               "the torch half of trainscope was built against torch {} in {}, which is gone: "
               "rebuild trainscope against the torch you have (make PYTHON=..., or pip install .)",
               TRAINSCOPE_TORCH_BUILT_VERSION, dir.string());
  if (!std::regex_search(text, m, std::regex(R"(__version__\s*=\s*['"]([^'"\n]*)['"])")))
    core::fail(core::ErrorKind::kRuntime,
               "cannot read the version of the torch in {} (its version.py); rebuild trainscope "
               "against the torch you have (make PYTHON=..., or pip install .)",
               dir.string());
  if (m[1].str() != TRAINSCOPE_TORCH_BUILT_VERSION)
    core::fail(core::ErrorKind::kRuntime,
               "the torch half of trainscope was built for torch {} and {} holds torch {}: "
               "rebuild trainscope against it (make, or pip install --force-reinstall .)",
               TRAINSCOPE_TORCH_BUILT_VERSION, dir.string(), core::escape_for_display(m[1].str()));
  // The same version built from another commit (a nightly, a source build).
  if (std::regex_search(text, m, std::regex(R"(git_version\s*=\s*['"]([0-9a-f]+)['"])")) &&
      std::string_view(TRAINSCOPE_TORCH_BUILT_GIT).size() > 0 &&
      m[1].str() != TRAINSCOPE_TORCH_BUILT_GIT)
    core::fail(core::ErrorKind::kRuntime,
               "the torch half of trainscope was built for torch {} at commit {} and {} holds "
               "the same version at commit {}: rebuild trainscope against it",
               TRAINSCOPE_TORCH_BUILT_VERSION,
               std::string(TRAINSCOPE_TORCH_BUILT_GIT).substr(0, 12), dir.string(),
               m[1].str().substr(0, 12));
}
#endif

TorchCommands* load(bool required) {
  const fs::path path = library_path();
  if (!required && !fs::exists(path)) return nullptr;
#ifdef TRAINSCOPE_TORCH_BUILT_VERSION
  if (!std::getenv("TRAINSCOPE_TORCH_COMMANDS")) check_torch(path);
#endif
  // libtorch's c10d logs to stderr, with C++ stack traces (a rank that
  // cannot reach its rendezvous, a peer that closed its socket): trainscope
  // says what failed in its own line, so c10's log speaks only with -v.
  // libc10 reads the variable when it loads.
  if (core::verbosity() < core::Verbosity::kVerbose) setenv("TORCH_CPP_LOG_LEVEL", "FATAL", 0);
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
