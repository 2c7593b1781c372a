// Which Debian packages the running process's code comes from: the program
// and every shared object it has mapped (libtorch, the BLAS, libc, ...),
// each mapped to the installed package that owns it and that package's exact
// version, read from dpkg's database. `env recreate` pins these versions.
//
// Manifest keys (group "packages"):
//   packages.architecture            dpkg's native architecture (amd64, arm64)
//   packages.debian.<name>:<arch>    the installed version ("1.13.1+dfsg-4")
//   packages.objects.<name>:<arch>   the file names of its objects the process
//                                    mapped, space-separated
//   packages.installed.<name>:<arch> when it was installed (its info/*.list
//                                    file's mtime, UTC, 20250520T143000Z)
//   packages.unowned                 mapped objects no package owns (a build
//                                    tree's libraries, pip wheels), or "none"
//   packages.source                  only when there is no dpkg database: why
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env/manifest.h"

namespace trainscope::env {

// The files a /proc/PID/maps text maps with execute permission (the program
// and its shared objects), each once, in order of first mapping. Anonymous,
// deleted and pseudo mappings ([vdso], /memfd:...) are left out.
std::vector<std::string> mapped_objects(std::string_view maps);

// Where the package lookups read dpkg's database and keep their cache.
struct PackageOptions {
  // dpkg's database: info/*.list (who owns which file) and status.
  std::filesystem::path dpkg_dir = "/var/lib/dpkg";
  // Where the path -> package answers are cached, valid while dpkg's status
  // file is unchanged; "" = $XDG_CACHE_HOME/trainscope, else
  // ~/.cache/trainscope. Nothing is cached when the folder cannot be written.
  std::filesystem::path cache_dir;
};

// The packages owning `objects` (absolute paths as the kernel names them;
// /usr-merged paths also match dpkg's /lib, /bin, /sbin entries), as the
// "packages.*" keys above. A cold lookup reads every info/*.list file (~15 MB
// on a developer machine); a cached one reads one small file.
Manifest packages_of(const std::vector<std::string>& objects, const PackageOptions& options = {});

// packages_of(mapped_objects(/proc/self/maps)): call it once the libraries a
// run uses are loaded (capture_torch does, after a matrix product).
Manifest capture_loaded_packages(const PackageOptions& options = {});

}  // namespace trainscope::env
