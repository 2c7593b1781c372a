// From diagnosis to remedy: what rebuilds a run's software environment on
// another machine. A run's manifest names the Debian release it ran on and
// the exact version of every package whose program or shared objects its
// process mapped (env/packages.h); a Recipe pins them, a Dockerfile installs
// them on that release, and check_pins asks apt here whether each pinned
// version can still be installed.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env/manifest.h"

namespace trainscope::env {

struct PinnedPackage {
  std::string name;     // libtorch1.13
  std::string arch;     // amd64, all, or a foreign architecture (i386)
  std::string version;  // 1.13.1+dfsg-4
  // What apt-get install takes: name=version (name:arch=version if foreign).
  std::string pin;
  // The file names of it the run mapped.
  std::vector<std::string> objects;
  // When it was installed, 20250520T143000Z ("" when not recorded).
  std::string installed;
};

struct Recipe {
  std::string image;                    // debian:bookworm (system.os.id:system.os.codename)
  std::string os;                       // Debian GNU/Linux 12 (bookworm)
  std::string debian_version;           // 12.11 ("" when not recorded)
  std::string arch;                     // dpkg's native architecture, amd64
  std::vector<PinnedPackage> packages;  // by name
  // Pins of the packages holding libtorch*/libc10*, and the BLAS loaded.
  std::vector<std::string> libtorch, blas;
  // python.package.<name> -> version to pip install, and the names left to
  // a pinned Debian package python3-<name>.
  std::map<std::string, std::string> pip;
  std::vector<std::string> python_from_debian;
  // Mapped objects of no package.
  std::vector<std::string> unowned;
  // snapshot.debian.org moments holding the pinned versions: the end of
  // each day a package was installed (the run's start when none recorded).
  std::vector<std::string> snapshots;
  // Set when the run used trainscope built from source; dirty when that
  // build had uncommitted changes ("<commit>-dirty").
  std::string trainscope_commit, trainscope_version;
  bool trainscope_dirty = false;
};

// The recipe in a run's manifest; `started` (20261126T055348Z) is the run's
// start, the snapshot moment when no install times are recorded. Python
// packages come from "python.packages.<dist>" (what the Python package
// records for every imported distribution) and "python.package.<name>" ->
// version; a name whose Debian package python3-<name> is pinned is left to
// Debian, the others are pip-installed. Throws core::Error (kNotFound) when
// the manifest has no package data (a run recorded before trainscope
// captured it, or a `watch` run, whose program trainscope does not load),
// or no release to build from.
Recipe recipe(const Manifest& manifest, std::string_view started = "");

// A Dockerfile building the recipe: FROM the release (--platform from the
// architecture), apt-get install of every pin, pip install of the Python
// packages, and the commit of trainscope to build when the run used its own
// build. With --build-arg SNAPSHOT=yes it adds snapshot.debian.org as of
// recipe.snapshots, for versions Debian has replaced since. `about` names
// the run in the first comment.
std::string dockerfile(const Recipe& recipe, std::string_view about);

struct PinCheck {
  std::string pin;
  bool ok = false;
  std::string message;  // why not, and what to do ("" when ok)
};

// Runs `apt-get install --simulate` of every pin here as on a machine with
// nothing installed (an empty dpkg status), so each version must come from
// an archive apt's lists know, not from this machine's installed packages;
// one result per pin, in the recipe's order. When some versions are in no
// archive, a second simulation of the others tells whether they install.
// Throws core::Error when apt-get cannot be run. Takes as long as apt needs
// to resolve the whole set (about 20 s a round for a libtorch run on 2 busy
// cores).
std::vector<PinCheck> check_pins(const Recipe& recipe);

// apt-get's simulate output (stdout and stderr) read for each of `pins`
// (indexes into recipe.packages); the part of check_pins that does not run
// apt.
std::vector<PinCheck> read_simulation(const Recipe& recipe, const std::vector<size_t>& pins,
                                      std::string_view apt_output, int exit_code);

}  // namespace trainscope::env
