// `env recreate`: the Debian packages a run's process mapped, pinned in a
// Dockerfile, checked by apt here. Real trainings, dpkg's real database, the
// real apt-get; versions are checked against dpkg-query run by the test.
#include "trainscope/env/recreate.h"

#include <gtest/gtest.h>

#include <fstream>
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

std::string os_release(const std::string& field) {
  auto r = run_command(". /etc/os-release && echo \"$" + field + "\"");
  return trim(r.out);
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
  std::string stale = "trainscope-dpkg-owners 2\tamd64\t1 1\n" + libc + "\tlibfake:amd64\t9\n";
  std::ofstream(cache) << stale;
  EXPECT_EQ(packages_of(objects, o), cold);
  EXPECT_NE(read(cache).find(key), std::string::npos);
}

TEST(RecreateTest, PythonPackagesGoToPipUnlessDebianHoldsThem) {
  Manifest m = {{"packages.debian.python3-numpy:amd64", "1:1.24.2-1"},
                {"packages.objects.python3-numpy:amd64", "_multiarray_umath.so"},
                {"packages.debian.libc6:amd64", "2.36-9+deb12u10"},
                {"packages.debian.libfoo:i386", "1.0-1"},
                {"packages.architecture", "amd64"},
                {"packages.unowned", "/opt/ts/build/lib/libtrainscope.so"},
                {"build.trainscope.commit", "abc123"},
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
  EXPECT_EQ(r.trainscope_commit, "abc123");
  const std::string d = dockerfile(r, "run x");
  EXPECT_NE(d.find("FROM --platform=linux/amd64 debian:bookworm\n"), std::string::npos) << d;
  EXPECT_NE(d.find("      python3-numpy=1:1.24.2-1 \\\n"), std::string::npos) << d;
  EXPECT_NE(d.find("'scikit_learn==1.3.0'"), std::string::npos) << d;
  EXPECT_NE(d.find("git checkout abc123"), std::string::npos) << d;
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
}

class RecreateCliTest : public ::testing::Test {
 protected:
  std::string command(const std::string& args) {
    return "XDG_CACHE_HOME=" + shell_quote((dir_ / "cache").string()) + " " + TS_CLI_BIN +
           " --store " + shell_quote("sqlite:" + (dir_ / "t.db").string()) + " " + args;
  }
  testing::CommandResult ts(const std::string& args) { return run_command(command(args)); }
  TempDir dir_;
};

// Issue 34: `env recreate` of a demo run names the exact libtorch and BLAS
// package versions, and its install commands pass apt-get install --simulate.
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
  // The same facts, asked independently of dpkg for the files the loader
  // links libtorch and the BLAS from.
  const Owned torch = dpkg_owner(linked_file("libtorch_cpu"));
  const Owned blas = dpkg_owner(linked_file("libblas"));
  for (const Owned& o : {torch, blas}) {
    const std::string pin = o.package + "=" + o.version;
    EXPECT_NE(docker.find("      " + pin + " \\\n"), std::string::npos) << pin << "\n" << docker;
  }
  EXPECT_EQ(j.at("libtorch"), nlohmann::json::array({torch.package + "=" + torch.version}));
  EXPECT_EQ(j.at("blas"), nlohmann::json::array({blas.package + "=" + blas.version}));
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
  size_t failed = 0;
  for (const auto& p : j.at("packages")) {
    const bool in_archive = archived.count(p.at("name").get<std::string>() + "=" +
                                           p.at("version").get<std::string>()) > 0;
    const bool ok = p.at("check").at("ok").get<bool>();
    failed += !ok;
    EXPECT_EQ(ok, in_archive) << p.dump();
    if (!ok) {
      EXPECT_NE(p.at("check").at("message").get<std::string>().find("snapshot.debian.org"),
                std::string::npos)
          << p.dump();
    }
    if (p.at("pin") == torch.package + "=" + torch.version ||
        p.at("pin") == blas.package + "=" + blas.version) {
      EXPECT_TRUE(ok) << p.dump();
    }
  }
  EXPECT_EQ(r.exit_code, failed > 0 ? 1 : 0) << r.out;
  if (failed > 0) {
    EXPECT_NE(r.out.find(std::to_string(failed) + " of "), std::string::npos) << r.out;
  }
  // And apt, run by the test, installs exactly these versions on a machine
  // with nothing installed.
  std::ofstream(dir_ / "empty-status").close();
  auto apt = run_command(
      "LC_ALL=C apt-get install --simulate --no-install-recommends -o "
      "Dir::State::status=" +
      shell_quote((dir_ / "empty-status").string()) + " " + torch.package + "=" + torch.version +
      " " + blas.package + "=" + blas.version);
  ASSERT_EQ(apt.exit_code, 0) << apt.out;
  EXPECT_NE(apt.out.find("Inst " + torch.package + " (" + torch.version + " "), std::string::npos)
      << apt.out;
  EXPECT_NE(apt.out.find("Inst " + blas.package + " (" + blas.version + " "), std::string::npos)
      << apt.out;
  // Without --check: the table and the libtorch line.
  auto text = ts("env recreate tiny --out " + shell_quote(out.string()));
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("libtorch: " + torch.package + "=" + torch.version), std::string::npos)
      << text.out;
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
