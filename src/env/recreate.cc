// A run's software environment as a Dockerfile with pinned Debian packages,
// and apt's verdict on each pin here.
#include "trainscope/env/recreate.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "process.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::env {

namespace {

std::string get(const Manifest& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? "" : it->second;
}

// A store's bytes become Dockerfile instructions and shell words here: each
// value is checked against what it names (at most `max` bytes, checked
// before the regex, which recurses per character), or the recipe is refused
// with one line naming the key.
void require(const std::string& key, const std::string& value, const char* pattern, size_t max,
             const char* what) {
  if (value.size() <= max && std::regex_match(value, std::regex(pattern))) return;
  throw core::Error(fmt::format("its manifest's {} is not {} ('{}'); refusing to write it into a "
                                "Dockerfile",
                                core::escape_cut(key, 120), what, core::escape_cut(value, 80)),
                    core::ErrorKind::kUsage);
}

// Text that only goes into a comment line: one line, printable.
std::string comment_text(std::string_view s) {
  std::string out = core::escape_for_display(s.substr(0, std::min<size_t>(s.size(), 200)));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

constexpr const char* kDebianName = "[a-z0-9][a-z0-9+.-]*";
constexpr const char* kDebianVersion = "[0-9][A-Za-z0-9.+~:-]*";
constexpr const char* kWord = "[A-Za-z0-9][A-Za-z0-9._-]*";

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool starts_with_any(const std::string& s, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes)
    if (s.rfind(p, 0) == 0) return true;
  return false;
}

PinnedPackage pinned(const std::string& key, const std::string& version, const Manifest& m,
                     const std::string& native) {
  PinnedPackage p;
  const size_t colon = key.find(':');
  p.name = key.substr(0, colon);
  p.arch = colon == std::string::npos ? "" : key.substr(colon + 1);
  p.version = version;
  const std::string k = "packages.debian." + key;
  require(k, p.name, kDebianName, 128, "a Debian package name");
  if (!p.arch.empty()) require(k, p.arch, "[a-z0-9-]+", 32, "a Debian architecture");
  require(k, version, kDebianVersion, 128, "a Debian version");
  const bool foreign = !p.arch.empty() && p.arch != native && p.arch != "all";
  p.pin = p.name + (foreign ? ":" + p.arch : "") + "=" + version;
  p.objects = words(get(m, "packages.objects." + key));
  p.installed = get(m, "packages.installed." + key);
  if (!p.installed.empty())
    require("packages.installed." + key, p.installed, "[0-9]{8}T[0-9]{6}Z", 16,
            "a time like 20250520T143000Z");
  return p;
}

// The Debian package a PyPI name would be: python3-<lower case, _ as ->.
std::string debian_python_name(std::string name) {
  for (char& c : name) c = c == '_' || c == '.' ? '-' : static_cast<char>(std::tolower(c));
  return "python3-" + name;
}

// Which pins hold libtorch and which the BLAS the run really called.
void name_libtorch_and_blas(const Manifest& m, Recipe& r) {
  std::set<std::string> blas;
  for (const auto& path : words(get(m, "libraries.blas.loaded")))
    blas.insert(fs::path(path).filename().string());
  for (const auto& p : r.packages) {
    bool torch = false, is_blas = false;
    for (const auto& o : p.objects) {
      torch |= starts_with_any(o, {"libtorch", "libc10"});
      is_blas |= blas.count(o) > 0;
    }
    if (torch) r.libtorch.push_back(p.pin);
    if (is_blas) r.blas.push_back(p.pin);
  }
}

// The torch wheel the run loaded, when pip can install it again: by version
// from its index, or from the https URL it was installed from; what goes
// into the Dockerfile is checked here (a store's bytes are not trusted).
void add_torch(const Manifest& m, Recipe& r) {
  const std::string installer = get(m, "libraries.torch.installer");
  const std::string dist = get(m, "libraries.torch.distribution");
  const std::string url = get(m, "libraries.torch.url");
  if (installer == "conda" || installer == "source" || url.rfind("file:", 0) == 0) {
    r.torch_note = installer == "conda" ? "torch came from conda (" + comment_text(dist) + ")"
                   : installer == "source"
                       ? "torch was built from source"
                       : "torch was installed from a file, " + comment_text(url);
    return;
  }
  if (dist.empty()) return;  // a libtorch of Debian's (an old run), pinned with the packages
  require("libraries.torch.distribution", dist, R"(torch==[0-9][0-9A-Za-z.!_-]*(\+[0-9A-Za-z.]+)?)",
          96, "a torch version pip takes");
  constexpr const char* kHttps = R"(https://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%/+-]*)?)";
  r.torch_requirement = dist;
  if (!url.empty()) {
    require("libraries.torch.url", url, kHttps, 512, "an https URL");
    r.torch_url = url;
    return;
  }
  r.torch_index = get(m, "libraries.torch.index");
  require("libraries.torch.index", r.torch_index, kHttps, 256, "an https URL");
}

// The Python package records "python.packages.<dist>" (every imported
// distribution); "python.package.<name>" is read alike.
void add_python(const Manifest& m, Recipe& r) {
  std::set<std::string> debian;
  for (const auto& p : r.packages) debian.insert(p.name);
  std::set<std::string> from_debian;
  for (const std::string prefix : {"python.packages.", "python.package."}) {
    for (auto it = m.lower_bound(prefix); it != m.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      const std::string name = it->first.substr(prefix.size());
      require(it->first, name, kWord, 128, "a Python distribution name");
      require(it->first, it->second, "[A-Za-z0-9][A-Za-z0-9.+!_-]*", 64, "a Python version");
      if (debian.count(debian_python_name(name))) {
        from_debian.insert(name);
      } else if (name == "torch" && !r.torch_requirement.empty()) {
        continue;  // installed from its own index (torch_install)
      } else {
        r.pip[name] = it->second;
      }
    }
  }
  r.python_from_debian.assign(from_debian.begin(), from_debian.end());
}

// The Docker platform of a Debian architecture ("" when unknown).
std::string docker_platform(const std::string& arch) {
  static const std::map<std::string, std::string> kPlatforms = {
      {"amd64", "linux/amd64"},     {"arm64", "linux/arm64"},     {"armhf", "linux/arm/v7"},
      {"i386", "linux/386"},        {"ppc64el", "linux/ppc64le"}, {"s390x", "linux/s390x"},
      {"riscv64", "linux/riscv64"}, {"armel", "linux/arm/v5"}};
  auto it = kPlatforms.find(arch);
  return it == kPlatforms.end() ? "" : it->second;
}

std::string codename_of(const Recipe& r) { return r.image.substr(r.image.find(':') + 1); }

std::string header(const Recipe& r, std::string_view about) {
  std::string s = "# syntax=docker/dockerfile:1\n";
  s += fmt::format("# The software environment of {}, recorded on {}{}, {}.\n", about, r.os,
                   r.debian_version.empty() ? "" : " (" + r.debian_version + ")", r.arch);
  s += "# Written by `trainscope env recreate`. Every Debian package below owns the program or\n";
  s += "# a shared object the run's process mapped, pinned to the version it mapped.\n";
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : " ") + x;
    return out.empty() ? std::string("(none mapped)") : out;
  };
  s += "#   libtorch: " +
       (r.torch_requirement.empty() ? list(r.libtorch)
                                    : r.torch_requirement + " from " + r.torch_index) +
       "\n";
  s += "#   BLAS:     " + list(r.blas) + "\n";
  s += "# The data files are not included: their SHA-256 are in the run's manifest (data.*).\n";
  return s;
}

// Adds snapshot.debian.org as of recipe.snapshots when the build is given
// --build-arg SNAPSHOT=yes.
std::string snapshot_source(const Recipe& r) {
  if (r.image.rfind("debian:", 0) != 0 || r.snapshots.empty()) return "";
  const std::string code = codename_of(r);
  std::string moments;
  for (const auto& t : r.snapshots) moments += (moments.empty() ? "" : " ") + t;
  return fmt::format(
      "# A pinned version Debian has replaced since: build with --build-arg SNAPSHOT=yes,\n"
      "# which adds snapshot.debian.org as it was at the end of each day the run's packages\n"
      "# were installed.\n"
      "ARG SNAPSHOT=no\n"
      "RUN if [ \"$SNAPSHOT\" = yes ]; then \\\n"
      "      s=\"deb [check-valid-until=no] http://snapshot.debian.org/archive\"; \\\n"
      "      for t in {}; do \\\n"
      "        echo \"$s/debian/$t/ {} main\"; \\\n"
      "        echo \"$s/debian/$t/ {}-updates main\"; \\\n"
      "        echo \"$s/debian-security/$t/ {}-security main\"; \\\n"
      "      done > /etc/apt/sources.list.d/snapshot.list; \\\n"
      "    fi\n",
      moments, code, code, code);
}

// A pin found in an archive's pool is ADDed as its .deb (Docker's ADD needs
// no curl in the image); a pin repacked from the machine that ran --check is
// COPYed from debs/ in the build context. Both go to the same apt-get install
// as the other pins, so that apt resolves every dependency of the set at
// once: a .deb installed alone (dpkg -i) would need its dependencies first,
// and a later apt-get install could replace its version with the index's.
std::string deb_files(const Recipe& r, std::string& debs) {
  std::string added, copied, names;
  for (const auto& p : r.packages) {
    const std::string name = pool_file_name(p, r.arch), file = "/tmp/trainscope-debs/" + name;
    if (!p.pool_url.empty()) {
      added += "ADD " + (p.pool_sha256.empty() ? "" : "--checksum=sha256:" + p.pool_sha256 + " ") +
               p.pool_url + " " + file + "\n";
    } else if (!p.repacked_file.empty()) {
      copied += "COPY debs/" + name + " " + file + "\n";
      names += "#   debs/" + name + "\n";
    } else {
      continue;
    }
    debs += "      " + file + " \\\n";
  }
  if (!added.empty())
    added =
        "# Versions apt's index no longer lists, from the archive's pool, where `trainscope env\n"
        "# recreate --check` found them; installed with the other pins below so that apt\n"
        "# resolves all their dependencies together.\n" +
        added;
  if (!copied.empty())
    copied =
        "# Versions no archive serves any more, repacked from the installed files of the machine\n"
        "# `trainscope env recreate --check` ran on (dpkg-repack; their conffiles are that\n"
        "# machine's, as they were on its disk). The build context needs these files next to\n"
        "# this Dockerfile, which `trainscope env recreate RUN --check --out DIR` writes into\n"
        "# DIR/debs/ (or build with SNAPSHOT=yes where snapshot.debian.org is reachable):\n" +
        names + copied;
  return added + copied;
}

std::string apt_install(const Recipe& r) {
  std::string debs;
  std::string s = deb_files(r, debs);
  s += "RUN apt-get update \\\n"
       " && apt-get install -y --no-install-recommends --allow-downgrades \\\n" +
       debs;
  for (const auto& p : r.packages)
    if (p.pool_url.empty() && p.repacked_file.empty()) s += "      " + p.pin + " \\\n";
  s += " && rm -rf /var/lib/apt/lists/*" +
       std::string(debs.empty() ? "" : " /tmp/trainscope-debs") + "\n";
  return s;
}

// The torch wheel, in a virtual environment that later steps use.
std::string torch_install(const Recipe& r) {
  if (r.torch_requirement.empty())
    return r.torch_note.empty() ? "" : "# Not installed here: " + r.torch_note + ".\n";
  const std::string what =
      r.torch_url.empty() ? fmt::format("--index-url '{}' '{}'", r.torch_index, r.torch_requirement)
                          : fmt::format("'{}'", r.torch_url);
  return fmt::format(
      "# torch: the wheel the run loaded (libraries.torch.*), from where it came, into a\n"
      "# virtual environment that every later step uses.\n"
      "RUN apt-get update && apt-get install -y --no-install-recommends python3-venv \\\n"
      " && rm -rf /var/lib/apt/lists/* \\\n"
      " && python3 -m venv /opt/venv \\\n"
      " && /opt/venv/bin/python -m pip install --no-cache-dir {}\n"
      "ENV PATH=/opt/venv/bin:$PATH\n",
      what);
}

std::string pip_install(const Recipe& r) {
  if (r.pip.empty() && r.python_from_debian.empty()) return "";
  std::string s = "# Python packages (python.packages.* in the run's manifest).\n";
  if (!r.python_from_debian.empty()) {
    s += "# From Debian, pinned above:";
    for (const auto& n : r.python_from_debian) s += " " + n;
    s += "\n";
  }
  if (r.pip.empty()) return s;
  s += "# From PyPI at the recorded versions (a pure-Python package Debian installed maps no\n";
  s += "# object, so it is not pinned above and comes from PyPI here):\n";
  if (!r.torch_requirement.empty()) {
    s += "RUN /opt/venv/bin/python -m pip install --no-cache-dir";
  } else {
    s += "RUN apt-get update && apt-get install -y --no-install-recommends python3-pip \\\n";
    s += " && rm -rf /var/lib/apt/lists/* \\\n";
    s += " && python3 -m pip install --no-cache-dir --break-system-packages";
  }
  for (const auto& [name, version] : r.pip) s += " \\\n      '" + name + "==" + version + "'";
  return s + "\n";
}

// The mapped objects this Dockerfile does not bring back, named so that
// nobody believes it does.
std::string unowned_note(const Recipe& r) {
  std::string s;
  for (const auto& u : r.unowned)
    if (fs::path(u).filename().string().find("trainscope") == std::string::npos)
      s += "#   " + u + "\n";
  return s.empty() ? ""
                   : "# Mapped by the run but from no Debian package, not installed here:\n" + s;
}

std::string trainscope_build(const Recipe& r) {
  if (r.trainscope_commit.empty()) return "";
  return fmt::format(
      "# trainscope itself: the run used a build from source, version {} at commit {}{}.\n"
      "# Give its repository: --build-arg TRAINSCOPE_REPO=<git URL>.\n"
      "ARG TRAINSCOPE_REPO\n"
      "RUN test -n \"$TRAINSCOPE_REPO\" || {{ echo 'give --build-arg TRAINSCOPE_REPO=<git URL of "
      "trainscope>'; exit 1; }} \\\n"
      " && apt-get update && apt-get install -y --no-install-recommends git ca-certificates "
      "nodejs npm \\\n"
      " && git clone \"$TRAINSCOPE_REPO\" /opt/trainscope && cd /opt/trainscope \\\n"
      " && git checkout {} \\\n"
      " && ./scripts/install-deps.sh \\\n"
      " && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release{} \\\n"
      " && cmake --build build -j\"$(nproc)\" --target trainscope_cli "
      "trainscope_torch_commands\n"
      "ENV PATH=/opt/trainscope/build/bin:$PATH\n",
      r.trainscope_version, r.trainscope_commit,
      r.trainscope_dirty ? " with uncommitted changes, which this checkout lacks" : "",
      r.trainscope_commit,
      r.torch_requirement.empty() ? "" : " -DTRAINSCOPE_TORCH_PYTHON=/opt/venv/bin/python");
}

// The end of each day a pinned package was installed, as snapshot.debian.org
// names a moment; the run's start when no install time is recorded.
std::vector<std::string> snapshot_moments(const Recipe& r, std::string_view started) {
  std::set<std::string> days;
  for (const auto& p : r.packages)
    if (p.installed.size() >= 8) days.insert(p.installed.substr(0, 8) + "T235959Z");
  if (days.empty() && !started.empty()) days.insert(std::string(started));
  return {days.begin(), days.end()};
}

// trainscope's own build, when a mapped object of no package is trainscope.
void add_trainscope(const Manifest& m, Recipe& r) {
  for (const auto& u : r.unowned)
    if (fs::path(u).filename().string().find("trainscope") != std::string::npos)
      r.trainscope_commit = get(m, "build.trainscope.commit");
  if (r.trainscope_commit.ends_with("-dirty")) {
    r.trainscope_commit.resize(r.trainscope_commit.size() - 6);
    r.trainscope_dirty = true;
  }
  r.trainscope_version = get(m, "build.trainscope.version");
  if (r.trainscope_commit.empty()) return;
  require("build.trainscope.commit", r.trainscope_commit, "[0-9a-f]{7,40}", 40, "a git commit");
  require("build.trainscope.version", r.trainscope_version, "[0-9A-Za-z.+-]*", 64, "a version");
}

}  // namespace

Recipe recipe(const Manifest& m, std::string_view started) {
  Recipe r;
  const std::string prefix = "packages.debian.";
  for (auto it = m.lower_bound(prefix); it != m.end() && it->first.rfind(prefix, 0) == 0; ++it)
    r.packages.push_back(
        pinned(it->first.substr(prefix.size()), it->second, m, get(m, "packages.architecture")));
  if (r.packages.empty()) {
    const std::string why = get(m, "packages.source");
    throw core::Error(
        why.empty()
            ? "its environment manifest has no Debian package versions (packages.debian.*): "
              "it was recorded before trainscope captured them, or by a command that "
              "does not load libtorch (`watch`); train it again to recreate it"
            : "its machine had no Debian packages to pin: " + why,
        core::ErrorKind::kNotFound);
  }
  const std::string id = get(m, "system.os.id"), codename = get(m, "system.os.codename");
  if (id.empty() || codename.empty())
    throw core::Error(
        "its environment manifest names no release to build FROM (system.os.id and "
        "system.os.codename from /etc/os-release are missing)",
        core::ErrorKind::kNotFound);
  require("system.os.id", id, "[a-z0-9][a-z0-9._-]*", 64, "an image name");
  require("system.os.codename", codename, "[a-z0-9][a-z0-9._-]*", 64, "a release name");
  r.image = id + ":" + codename;
  r.os = comment_text(get(m, "system.os"));
  r.debian_version = comment_text(get(m, "system.debian_version"));
  r.arch = get(m, "packages.architecture");
  if (!r.arch.empty())
    require("packages.architecture", r.arch, "[a-z0-9-]+", 32, "an architecture");
  r.unowned = words(get(m, "packages.unowned"));
  for (auto& u : r.unowned) u = comment_text(u);
  if (r.unowned == std::vector<std::string>{"none"}) r.unowned.clear();
  add_trainscope(m, r);
  r.snapshots = snapshot_moments(r, started);
  name_libtorch_and_blas(m, r);
  add_torch(m, r);
  add_python(m, r);
  return r;
}

std::string dockerfile(const Recipe& r, std::string_view about) {
  std::string s = header(r, comment_text(about));
  const std::string platform = docker_platform(r.arch);
  s += "FROM " + (platform.empty() ? "" : "--platform=" + platform + " ") + r.image + "\n";
  s += "ENV DEBIAN_FRONTEND=noninteractive\n";
  s += snapshot_source(r);
  s += apt_install(r);
  s += torch_install(r);
  s += pip_install(r);
  s += trainscope_build(r);
  s += unowned_note(r);
  return s;
}

std::optional<PinCheck> check_torch(const Recipe& r) {
  if (r.torch_requirement.empty()) return std::nullopt;
  PinCheck c{.pin = r.torch_requirement};
  const std::string version = r.torch_requirement.substr(r.torch_requirement.find("==") + 2);
  const std::string page =
      !r.torch_url.empty() ? r.torch_url
                           : r.torch_index + (r.torch_index.ends_with("/") ? "" : "/") + "torch/";
  int status = 0;
  const std::string html =
      process::capture({"curl", "-fsSL", "--retry", "2", "--connect-timeout", "15", "--max-time",
                        "120", !r.torch_url.empty() ? "-I" : "-s", page},
                       &status);
  if (status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 127)) {
    c.message = "curl is not installed here, so the index was not asked: apt-get install curl";
    return c;
  }
  std::string plus = version;  // a local label's '+' is %2B in the index's links
  if (const auto at = plus.find('+'); at != std::string::npos) plus.replace(at, 1, "%2B");
  const bool served = !r.torch_url.empty()
                          ? WIFEXITED(status) && WEXITSTATUS(status) == 0
                          : html.find("torch-" + version + "-") != std::string::npos ||
                                html.find("torch-" + plus + "-") != std::string::npos;
  if (served) {
    c.ok = true;
    c.source = "index";
  } else {
    c.message = !r.torch_url.empty() ? "the wheel's URL " + page + " did not answer"
                : html.empty()
                    ? "the index " + r.torch_index + " did not answer (" + page + ")"
                    : "the index " + r.torch_index + " lists no file of torch " + version;
  }
  return c;
}

std::vector<PinCheck> read_simulation(const Recipe& r, const std::vector<size_t>& pins,
                                      std::string_view apt_output, int exit_code) {
  static const std::regex kInst(R"(^Inst ([^ :]+)(:[^ ]+)? \(([^ ]+) )");
  static const std::regex kNoVersion(
      R"(^E: Version '([^']+)' for '([^':]+)(:[^']*)?' was not found)");
  static const std::regex kNoPackage(R"(^E: Unable to locate package ([^ :]+))");
  std::map<std::string, std::string> installs, missing;  // name -> version / message
  std::string first_error;
  std::istringstream in{std::string(apt_output)};
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kInst)) {
      installs[m[1]] = m[3];
    } else if (std::regex_search(line, m, kNoVersion)) {
      missing[m[2]] = m[1];
    } else if (std::regex_search(line, m, kNoPackage)) {
      missing[m[1]] = "";
    } else if (first_error.empty() && line.rfind("E: ", 0) == 0) {
      first_error = line.substr(3);
    }
  }
  std::vector<PinCheck> out;
  for (size_t i : pins) {
    const PinnedPackage& p = r.packages.at(i);
    PinCheck c{p.pin, false, "", "", ""};
    if (auto e = missing.find(p.name); e != missing.end()) {
      c.message =
          e->second.empty()
              ? "no archive apt knows here has this package: check apt's sources"
              : fmt::format(
                    "version {} is in no archive apt knows here{}{}{}: Debian has replaced it "
                    "(or run `apt-get update` if apt's lists are older); build with "
                    "--build-arg SNAPSHOT=yes to take it from snapshot.debian.org",
                    e->second, r.pool_searched ? " nor in their pools" : "",
                    r.repack_searched ? ", nor installed on this machine to repack" : "",
                    p.installed.size() >= 8 ? ", installed " + p.installed.substr(0, 8) : "");
    } else if (auto it = installs.find(p.name); it != installs.end()) {
      c.ok = it->second == p.version;
      if (c.ok && !p.pool_file.empty()) {
        c.source = p.pool_url;
      } else if (c.ok && !p.repacked_file.empty()) {
        c.source = "repacked";
        c.note = repacked_note(p);
      } else if (c.ok) {
        c.source = "index";
      }
      if (!c.ok) c.message = "apt would install version " + it->second + " instead";
    } else {
      c.message = "apt did not resolve the set (exit code " + std::to_string(exit_code) +
                  "): " + (first_error.empty() ? "see `apt-get install --simulate`" : first_error);
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// One `apt-get install --simulate` of these pins with an empty dpkg status.
std::vector<PinCheck> simulate(const Recipe& r, const std::vector<size_t>& pins) {
  // An empty status: apt resolves as on a fresh machine, so an installed
  // version that no archive carries any longer does not pass.
  const fs::path status =
      fs::temp_directory_path() / ("trainscope-empty-dpkg-status-" + std::to_string(getpid()));
  std::ofstream(status).close();
  std::vector<std::string> args = {"env",        "LC_ALL=C",
                                   "apt-get",    "install",
                                   "--simulate", "--no-install-recommends",
                                   "-o",         "Dir::State::status=" + status.string()};
  // A pin with a pool or repacked file is that .deb (apt takes a path with a '/').
  for (size_t i : pins) {
    const PinnedPackage& p = r.packages[i];
    args.push_back(!p.pool_file.empty()       ? p.pool_file
                   : !p.repacked_file.empty() ? p.repacked_file
                                              : p.pin);
  }
  int st = -1;
  const std::string out = process::capture(args, &st, true);
  std::error_code ec;
  fs::remove(status, ec);
  if (st == -1 || (WIFEXITED(st) && WEXITSTATUS(st) == 127))
    throw core::Error("apt-get cannot be run here: --check needs Debian's apt",
                      core::ErrorKind::kCommandNotFound);
  return read_simulation(r, pins, out, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

}  // namespace

std::vector<PinCheck> check_pins(const Recipe& r) {
  std::vector<size_t> all(r.packages.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<PinCheck> out = simulate(r, all);
  // apt stops at a version it cannot find; the others get a round of their own.
  std::vector<size_t> rest;
  bool some_missing = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool is_missing = out[i].message.find("no archive apt knows") != std::string::npos;
    some_missing |= is_missing;
    if (!is_missing) rest.push_back(i);
  }
  if (!some_missing || rest.empty()) return out;
  std::vector<PinCheck> second = simulate(r, rest);
  for (size_t k = 0; k < rest.size(); ++k) out[rest[k]] = std::move(second[k]);
  return out;
}

}  // namespace trainscope::env
