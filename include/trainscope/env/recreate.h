// From diagnosis to remedy: what rebuilds a run's software environment on
// another machine. A run's manifest names the Debian release it ran on and
// the exact version of every package whose program or shared objects its
// process mapped (env/packages.h); a Recipe pins them, a Dockerfile installs
// them on that release, and check_pins asks apt here whether each pinned
// version can still be installed.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env/manifest.h"

namespace trainscope::env {

// One Debian package a run used, pinned to its exact version, and where a
// .deb of that version was found when the index no longer lists it.
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
  // Set by fetch_pool_files when apt's index no longer lists this version but
  // an archive's pool still holds its .deb: where it is, the copy fetched
  // into the cache (checked with dpkg-deb) and its SHA-256. All "" when the
  // index has the version, no pool has it, or nobody looked.
  std::string pool_url, pool_file, pool_sha256;
  // Set by repack_installed when no archive and no pool serves this version
  // but this machine has exactly it installed: the .deb dpkg-repack rebuilt
  // from the installed files (in the cache, checked with dpkg-deb). The
  // Dockerfile COPYs it from debs/<pool_file_name> in its build context.
  std::string repacked_file;
};

// What recreating a run's environment takes (recipe()): the base image,
// the pinned Debian packages, the Python packages and the torch wheel, and
// how trainscope was built. A plain value; fetch_pool_files and
// repack_installed fill in where the missing versions are.
struct Recipe {
  std::string image;                    // debian:bookworm (system.os.id:system.os.codename)
  std::string os;                       // Debian GNU/Linux 12 (bookworm)
  std::string debian_version;           // 12.11 ("" when not recorded)
  std::string arch;                     // dpkg's native architecture, amd64
  std::vector<PinnedPackage> packages;  // by name
  // Pins of the packages holding libtorch*/libc10*, and the BLAS loaded.
  std::vector<std::string> libtorch, blas;
  // The torch wheel the run loaded (libraries.torch.*, env/torch_package.h)
  // when pip can install it again: "torch==2.15.0" and its index; empty for
  // a torch of Debian's, conda's (torch_note says which) or a source build.
  // Checked when read: only a plain version and an https URL get here.
  std::string torch_requirement, torch_index, torch_note;
  // Set instead of torch_index for a wheel installed from an https URL
  // (libraries.torch.url): pip installs that URL.
  std::string torch_url;
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
  // Whether fetch_pool_files looked in the archives' pools (false when it
  // could not: no curl, no network).
  bool pool_searched = false;
  // Whether repack_installed could look for the missing versions among this
  // machine's installed packages (false when dpkg-repack is missing).
  bool repack_searched = false;
};

// The recipe in a run's manifest; `started` (20261126T055348Z) is the run's
// start, the snapshot moment when no install times are recorded. Python
// packages come from "python.packages.<dist>" (what the Python package
// records for every imported distribution) and "python.package.<name>" ->
// version; a name whose Debian package python3-<name> is pinned is left to
// Debian, the others are pip-installed. Throws core::Error (kNotFound) when
// the manifest has no package data (a run recorded before trainscope
// captured it, or a `watch` run, whose program trainscope does not load),
// or no release to build from; core::Error (kUsage) naming the key when a
// torch version or index it would write into the Dockerfile is not a plain
// version or an https URL.
Recipe recipe(const Manifest& manifest, std::string_view started = "");

// A Dockerfile building the recipe: FROM the release (--platform from the
// architecture), apt-get install of every pin (a pin with a pool file as the
// .deb ADDed from its pool URL, a repacked pin as the .deb COPYed from
// debs/<file> in the build context, both in the same apt-get install so that
// apt resolves their dependencies with the others), the torch wheel pinned
// from its index into the virtual environment /opt/venv (on PATH; later
// steps use it), pip install of the Python packages, and the commit of
// trainscope to build against that torch when the run used its own build. With --build-arg
// SNAPSHOT=yes it adds snapshot.debian.org as of recipe.snapshots, for versions Debian has replaced
// since. `about` names the run in the first comment.
std::string dockerfile(const Recipe& recipe, std::string_view about);

// Versions apt's index no longer lists, from the archives' pools.
//
// Debian's index lists only the newest versions of a release (the point
// release, -updates, -security); a version replaced since is dropped from it,
// but its .deb often stays in the archive's pool for a while. recipe() and
// dockerfile() need neither apt nor the network, so a Dockerfile is always
// written, with the SNAPSHOT fallback; fetch_pool_files (run by `env recreate
// --check`) asks apt and the archives for the dropped versions, after which
// dockerfile() ADDs their files and check_pins installs them.

// The name of a package version's file in a pool:
// <name>_<version without epoch>_<arch>.deb ("1:2.3-4" -> "2.3-4"; the
// recipe's architecture when the pin names none).
std::string pool_file_name(const PinnedPackage& p, std::string_view native_arch);

// Where an archive's pool would hold p's .deb, most likely first: the folder
// of each URL apt gives for another version of the package (`index_urls`,
// full URLs as `apt-get download --print-uris` prints them) with p's file
// name, on the archive that URL is in, then on each other of `archives` (the
// archive URIs apt knows, "http://deb.debian.org/debian/"). '~', '+' and ':'
// are percent-encoded, as apt does. No duplicates.
std::vector<std::string> pool_candidates(const PinnedPackage& p, std::string_view native_arch,
                                         const std::vector<std::string>& index_urls,
                                         const std::vector<std::string>& archives);

// Where fetch_pool_files keeps the .deb files it fetches.
struct PoolOptions {
  // Where fetched .deb files are kept and reused; "" =
  // $XDG_CACHE_HOME/trainscope/debs, else ~/.cache/trainscope/debs.
  std::filesystem::path cache_dir;
};

// For every pin whose version apt's index does not list (apt-cache madison):
// finds its file in the archives' pools (pool_candidates from the URLs of the
// versions apt lists, asked with HEAD requests by one curl), fetches it into
// the cache (a file already there is reused) and checks with `dpkg-deb -f`
// that it is that package, version and architecture; sets the pin's pool_*
// fields and recipe.pool_searched. Progress on stderr (log_info). Returns how
// many pins it found a file for. Without curl, or without the network, it
// finds none, says so in one warning and leaves pool_searched false; throws
// core::Error when apt cannot be run.
size_t fetch_pool_files(Recipe& recipe, const PoolOptions& options = {});

// Versions no archive serves any more, rebuilt from this machine.
//
// When a pinned version is in neither apt's index nor a pool but this
// machine has exactly that version and architecture installed (dpkg-query),
// dpkg-repack rebuilds its .deb from the installed files and dpkg's
// database (under fakeroot -u when not root). A conffile the machine's admin
// modified is taken as it is on disk, so such a package is this machine's
// copy, not Debian's. Run by `env recreate --check` only, after
// fetch_pool_files; recipe() and dockerfile() never repack.

// Where repack_installed keeps the .deb files it rebuilds, and the build
// context it copies them into.
struct RepackOptions {
  // Where rebuilt .deb files are kept; "" = the pool cache's "repacked"
  // folder ($XDG_CACHE_HOME/trainscope/debs/repacked, else
  // ~/.cache/trainscope/debs/repacked).
  std::filesystem::path cache_dir;
  // The Dockerfile's folder (its build context): each rebuilt file is
  // copied to <context_dir>/debs/<pool_file_name>; "" = not copied.
  std::filesystem::path context_dir;
};

// For every pin without a pool file whose version apt's index does not list
// (apt-cache madison) and which is installed here at that version and
// architecture: rebuilds it with dpkg-repack into the cache (a new build each
// time: the installed files may have changed), checks it with `dpkg-deb -f`,
// copies it into the build context and sets the pin's repacked_file and
// recipe.repack_searched. Returns how many it rebuilt. Without dpkg-repack
// it rebuilds none and says so in one warning ("dpkg-repack is not installed
// here: apt-get install dpkg-repack"); throws core::Error when apt or dpkg
// cannot be run.
size_t repack_installed(Recipe& recipe, const RepackOptions& options = {});

// What a repacked pin is, for the check's note: "repacked from this
// machine's installed files (dpkg-repack): no archive serves version X any
// more; its conffiles are this machine's".
std::string repacked_note(const PinnedPackage& p);

// Whether apt (or the recreated build) can install one pin, and from
// where; check_pins returns one per pin.
struct PinCheck {
  std::string pin;
  bool ok = false;
  std::string message;  // why not, and what to do ("" when ok)
  // Where apt would take it from when ok: "index", the pool URL of the file
  // fetch_pool_files fetched, or "repacked" for a file repack_installed
  // rebuilt ("" when not ok).
  std::string source;
  std::string note;  // repacked_note() for a repacked pin, else ""
};

// Whether the recipe's torch wheel (torch_requirement) is still served by
// its index: the index's PEP 503 page for torch (curl) lists a file of that
// version. ok and source "index" when it does; a message saying what is
// missing or what failed (no curl, no answer) when not. nullopt when the
// recipe pins no torch wheel.
std::optional<PinCheck> check_torch(const Recipe& recipe);

// Runs `apt-get install --simulate` of every pin here as on a machine with
// nothing installed (an empty dpkg status), so each version must come from
// an archive apt's lists know or from its pool or repacked file (a pin with
// one is given to apt as that .deb, in the same simulation), not from this machine's
// installed packages; one result per pin, in the recipe's order. When some
// versions are in neither, a second simulation of the others tells whether
// they install.
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
