#include "trainscope/env/manifest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "files.h"
#include "process.h"
#include "trainscope/core/argv.h"
#include "trainscope/core/error.h"
#include "trainscope/core/util.h"
#include "trainscope/core/version.h"
#include "trainscope/env/cpus.h"

extern char** environ;

namespace fs = std::filesystem;

namespace trainscope::env {
using core::build_commit;
using core::build_compiler;
using core::format_double;
using core::host_name;
using core::sha256_file;
using core::sha256_hex;
using core::version;

namespace {

using files::read_line;
using files::read_text;
using process::capture;

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

const char* const kGroupOrder[] = {"hardware", "driver", "libraries", "system", "threads", "flags",
                                   "env",      "data",   "config",    "seeds",  "build",   "git"};

// Groups that only trainscope writes: kGroupOrder's, and those of the
// package lists and the Python interpreter; not `data`, the SHA-256 of the
// files a run read, which a script gives for the files it reads
// (trainscope.inputs).
bool measured_group(std::string_view g) {
  if (g == "packages" || g == "python" || g == "process") return true;
  if (g == "data") return false;
  return std::find(std::begin(kGroupOrder), std::end(kGroupOrder), g) != std::end(kGroupOrder);
}

size_t group_rank(const std::string& g) {
  for (size_t i = 0; i < std::size(kGroupOrder); ++i)
    if (g == kGroupOrder[i]) return i;
  return std::size(kGroupOrder);
}

}  // namespace

std::optional<std::string> user_entry_problem(std::string_view key, std::string_view value) {
  if (auto why = core::text_problem(key, kMaxUserEntryBytes))  // data.sha256.PATH: a path
    return fmt::format(
        "environment entry '{}' {}: a key is 1 to 4096 bytes of UTF-8 text without control "
        "characters, not only blanks",
        core::escape_cut(key, 64), *why);
  if (value.size() > kMaxUserEntryBytes)
    return fmt::format(
        "the value of environment entry '{}' is {} bytes, longer than {}; record a file as an "
        "artifact instead",
        core::escape_cut(key, 64), value.size(), kMaxUserEntryBytes);
  // What the checklist and the card read as a data file's hash (thirtieth
  // hunt, A-D10): a SHA-256, or readers refuse the run as damaged.
  if (key.starts_with("data.sha256.") && !core::is_sha256_hex(value))
    return fmt::format(
        "the value of environment entry '{}' is '{}', not a SHA-256 (64 lower-case hex digits); "
        "trainscope.inputs() records the files' hashes",
        core::escape_cut(key, 64), core::escape_cut(value, 80));
  const std::string_view group = key.substr(0, key.find('.'));
  if (!measured_group(group)) return std::nullopt;
  return fmt::format(
      "environment entry '{}' is in the group '{}', which trainscope measures itself (readers "
      "trust it: env recreate pins packages.*); add yours under a group of your own, e.g. "
      "'user.{}'",
      core::escape_cut(key, 64), core::escape_for_display(group), core::escape_cut(key, 64));
}

namespace process {

std::string capture(const std::vector<std::string>& args, int* status, bool with_stderr) {
  std::string out;
  if (status) *status = -1;
  int fds[2];
  if (pipe(fds) != 0) return out;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  if (with_stderr) {
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  } else {
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<char*> argv = core::exec_argv(args);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc == 0) {
    std::array<char, 4096> buf{};
    ssize_t n;
    while ((n = read(fds[0], buf.data(), buf.size())) > 0) out.append(buf.data(), n);
  }
  close(fds[0]);
  int st = -1;
  if (rc == 0) waitpid(pid, &st, 0);
  if (status) *status = st;
  return out;
}

}  // namespace process

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo c;
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> sockets;
  std::string physical_id, arm_implementer, arm_part, arm_variant, arm_revision;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(std::string_view(line).substr(0, colon));
    std::string value = trim(std::string_view(line).substr(colon + 1));
    if (key == "processor") {
      // x86 uses "processor : N"; some Arm kernels print "Processor : name".
      if (!value.empty() && std::isdigit(static_cast<unsigned char>(value[0]))) {
        ++c.logical;
      } else if (c.model_name.empty()) {
        c.model_name = value;
      }
    } else if (key == "vendor_id") {
      c.vendor = value;
    } else if (key == "model name") {
      c.model_name = value;
    } else if (key == "cpu family") {
      c.family = value;
    } else if (key == "model") {
      c.model = value;
    } else if (key == "stepping") {
      c.stepping = value;
    } else if (key == "microcode") {
      c.microcode = value;
    } else if (key == "flags" || key == "Features") {
      if (c.flags.empty()) {
        std::istringstream fs(value);
        std::string f;
        while (fs >> f) c.flags.push_back(f);
      }
    } else if (key == "physical id") {
      physical_id = value;
      sockets.insert(value);
    } else if (key == "core id") {
      cores.emplace(physical_id, value);
    } else if (key == "CPU implementer") {
      arm_implementer = value;
    } else if (key == "CPU part") {
      arm_part = value;
    } else if (key == "CPU variant") {
      arm_variant = value;
    } else if (key == "CPU revision") {
      arm_revision = value;
    }
  }
  if (!arm_implementer.empty()) {
    c.arch = "aarch64";
    static const std::map<std::string, std::string> kImplementers = {
        {"0x41", "ARM"},      {"0x42", "Broadcom"},  {"0x43", "Cavium"},
        {"0x46", "Fujitsu"},  {"0x48", "HiSilicon"}, {"0x4e", "NVIDIA"},
        {"0x51", "Qualcomm"}, {"0x61", "Apple"},     {"0xc0", "Ampere"}};
    auto it = kImplementers.find(arm_implementer);
    c.vendor = it != kImplementers.end() ? it->second : arm_implementer;
    c.family = arm_variant;
    c.model = arm_part;
    c.stepping = arm_revision;
    if (c.model_name.empty()) c.model_name = c.vendor + " part " + arm_part;
  } else if (!c.vendor.empty()) {
    c.arch = "x86_64";
  }
  c.physical = cores.empty() ? c.logical : static_cast<int>(cores.size());
  c.sockets = sockets.empty() ? 1 : static_cast<int>(sockets.size());
  return c;
}

std::string numerics_flags(const CpuInfo& cpu) {
  std::vector<std::string> out;
  for (const auto& f : cpu.flags) {
    if (f == "avx" || f == "avx2" || f == "fma" || f == "f16c" || f.rfind("avx512", 0) == 0 ||
        f == "asimd" || f == "sve" || f == "sve2" || f == "fphp" || f == "asimdhp" ||
        f == "amx_tile" || f == "amx_bf16")
      out.push_back(f);
  }
  std::sort(out.begin(), out.end());
  std::string s;
  for (const auto& f : out) s += (s.empty() ? "" : " ") + f;
  return s.empty() ? "none" : s;
}

int simd_float_lanes(const CpuInfo& cpu) {
  auto has = [&](std::string_view f) {
    return std::find(cpu.flags.begin(), cpu.flags.end(), f) != cpu.flags.end();
  };
  if (has("avx512f")) return 16;
  if (has("avx") || has("avx2")) return 8;
  return 4;
}

int simd_float_lanes() { return simd_float_lanes(parse_cpuinfo(read_text("/proc/cpuinfo"))); }

Manifest capture_system(const fs::path& root) {
  Manifest m;
  CpuInfo cpu = parse_cpuinfo(read_text(root / "proc/cpuinfo"));
  m["hardware.cpu.arch"] = cpu.arch.empty() ? "unknown" : cpu.arch;
  m["hardware.cpu.vendor"] = cpu.vendor;
  m["hardware.cpu.model_name"] = cpu.model_name;
  m["hardware.cpu.family"] = cpu.family;
  m["hardware.cpu.model"] = cpu.model;
  m["hardware.cpu.stepping"] = cpu.stepping;
  m["hardware.cpu.microcode"] = cpu.microcode.empty() ? "unknown" : cpu.microcode;
  m["hardware.cpu.numerics_flags"] = numerics_flags(cpu);
  m["hardware.cpu.simd_float_lanes"] = std::to_string(simd_float_lanes(cpu));
  m["hardware.cpu.logical_cores"] = std::to_string(cpu.logical);
  m["hardware.cpu.physical_cores"] = std::to_string(cpu.physical);
  m["hardware.cpu.sockets"] = std::to_string(cpu.sockets);
  const CpuBudget budget = cpu_budget(root);
  m["system.cpu.affinity_cpus"] = std::to_string(budget.logical);
  m["system.cpu.affinity_physical_cores"] = std::to_string(budget.physical);
  m["system.cpu.cgroup_quota"] = budget.quota > 0 ? format_double(budget.quota) : "none";
  m.merge(capture_isolation(root, cpu));
  fs::path cpu0 = root / "sys/devices/system/cpu/cpu0";
  auto khz = [&](const char* f) {
    std::string v = read_line(cpu0 / "cpufreq" / f);
    return v.empty() ? std::string("unknown") : std::to_string(std::stoll(v) / 1000) + " MHz";
  };
  m["hardware.cpu.min_freq"] = khz("cpuinfo_min_freq");
  m["hardware.cpu.max_freq"] = khz("cpuinfo_max_freq");
  std::error_code ec;
  for (int i = 0; i < 8; ++i) {
    fs::path idx = cpu0 / "cache" / ("index" + std::to_string(i));
    if (!fs::exists(idx, ec)) break;
    std::string level = read_line(idx / "level"), type = read_line(idx / "type");
    std::string name = "L" + level + (type == "Data" ? "d" : type == "Instruction" ? "i" : "");
    m["hardware.cache." + name] = read_line(idx / "size");
  }
  for (std::istringstream mem(read_text(root / "proc/meminfo")); !mem.eof();) {
    std::string line;
    std::getline(mem, line);
    if (line.rfind("MemTotal:", 0) == 0) {
      int64_t kb = std::stoll(trim(line.substr(9)));
      m["hardware.memory.total"] = fmt::format("{:.1f} GiB", static_cast<double>(kb) / 1048576.0);
    }
  }
  // OS and kernel.
  for (std::istringstream os(read_text(root / "etc/os-release")); !os.eof();) {
    std::string line;
    std::getline(os, line);
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      std::erase(v, '"');
      m["system.os"] = v;
    }
    // The image `env recreate` starts its Dockerfile FROM: <id>:<codename>.
    for (auto [field, key] :
         {std::pair{"ID=", "system.os.id"}, std::pair{"VERSION_CODENAME=", "system.os.codename"}}) {
      if (line.rfind(field, 0) != 0) continue;
      std::string v = line.substr(std::string_view(field).size());
      std::erase(v, '"');
      if (!v.empty()) m[key] = v;
    }
  }
  if (std::string v = read_line(root / "etc/debian_version"); !v.empty())
    m["system.debian_version"] = v;
  if (root == "/") {
    utsname u{};
    if (uname(&u) == 0) {
      m["system.kernel"] = std::string(u.sysname) + " " + u.release;
      m["system.machine"] = u.machine;
    }
    m["libraries.glibc"] = gnu_get_libc_version();
    m["system.hostname"] = host_name();
  } else {
    m["system.kernel"] = read_line(root / "proc/sys/kernel/osrelease");
  }
  return m;
}

Manifest capture_env_vars() {
  static const char* const kPrefixes[] = {
      "OMP_",     "MKL_",   "OPENBLAS_", "KMP_",    "GOMP_", "CUBLAS_", "CUDA_",      "CUDNN_",
      "PYTORCH_", "TORCH_", "DNNL_",     "ONEDNN_", "GOTO_", "BLIS_",   "NVIDIA_TF32"};
  static const char* const kAlways[] = {
      "OMP_NUM_THREADS",   "MKL_NUM_THREADS",         "OPENBLAS_NUM_THREADS",
      "OPENBLAS_CORETYPE", "CUBLAS_WORKSPACE_CONFIG", "CUDA_VISIBLE_DEVICES",
      "KMP_AFFINITY",      "OMP_PROC_BIND",           "TRAINSCOPE_UNITS"};
  Manifest m;
  for (const char* name : kAlways) m[std::string("env.") + name] = "unset";
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq));
    bool match = name == "LD_PRELOAD" || name == "LD_LIBRARY_PATH";
    for (const char* p : kPrefixes) match |= name.rfind(p, 0) == 0;
    for (const char* a : kAlways) match |= name == a;
    if (match) m["env." + name] = std::string(kv.substr(eq + 1));
  }
  return m;
}

Manifest capture_build() {
  return {{"build.trainscope.version", version()},
          {"build.trainscope.commit", build_commit()},
          {"build.compiler", build_compiler()}};
}

GitState capture_git_state(const fs::path& path) {
  GitState g;
  Manifest& m = g.manifest;
  std::error_code ec;
  fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path();
  if (dir.empty()) dir = ".";
  auto git = [&](std::vector<std::string> args, int* st = nullptr) {
    args.insert(args.begin(), {"git", "-C", dir.string()});
    return capture(args, st);
  };
  int st = 0;
  std::string head = trim(git({"rev-parse", "HEAD"}, &st));
  if (st != 0 || head.empty()) return g;
  m["git.commit"] = head;
  m["git.root"] = trim(git({"rev-parse", "--show-toplevel"}));
  std::string status = git({"status", "--porcelain", "--untracked-files=no"});
  m["git.dirty"] = status.empty() ? "false" : "true";
  // --binary: the patch holds binary files too, so `git apply` restores
  // every tracked change.
  if (!status.empty()) g.diff = git({"diff", "--binary", "HEAD"});
  m["git.diff_sha256"] = status.empty() ? "" : sha256_hex(g.diff);
  const std::string others = git({"ls-files", "--others", "--exclude-standard", "-z"});
  for (size_t at = 0; at < others.size();) {
    const size_t end = others.find('\0', at);
    g.untracked.push_back(others.substr(at, end == std::string::npos ? end : end - at));
    at = end == std::string::npos ? others.size() : end + 1;
  }
  m["git.untracked_files"] = std::to_string(g.untracked.size());
  return g;
}

Manifest capture_git(const fs::path& path) { return capture_git_state(path).manifest; }

namespace {
std::optional<std::pair<fs::path, GitState>>& warmed_git() {
  static std::optional<std::pair<fs::path, GitState>> warmed;
  return warmed;
}
fs::path git_key(const fs::path& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  return (ec ? path : abs).lexically_normal();
}
}  // namespace

void warm_git_state(const fs::path& path) {
  warmed_git() = std::make_pair(git_key(path), capture_git_state(path));
}

GitState git_state(const fs::path& path) {
  const auto& warmed = warmed_git();
  if (warmed && warmed->first == git_key(path)) return warmed->second;
  return capture_git_state(path);
}

namespace {

// What identifies a file's content for hash_files' memo; nullopt when it
// cannot be stat'ed (sha256_file then says why).
std::optional<std::array<int64_t, 7>> file_identity(const fs::path& f) {
  struct stat st {};
  if (stat(f.c_str(), &st) != 0) return std::nullopt;
  return std::array<int64_t, 7>{static_cast<int64_t>(st.st_dev),
                                static_cast<int64_t>(st.st_ino),
                                static_cast<int64_t>(st.st_size),
                                st.st_mtim.tv_sec,
                                st.st_mtim.tv_nsec,
                                st.st_ctim.tv_sec,
                                st.st_ctim.tv_nsec};
}

std::string memo_sha256(const fs::path& f) {
  static std::map<std::string, std::pair<std::array<int64_t, 7>, std::string>> memo;
  const auto id = file_identity(f);
  if (auto it = memo.find(f.string()); id && it != memo.end() && it->second.first == *id)
    return it->second.second;
  std::string sha = sha256_file(f);
  // Recorded only when the file did not change while it was read.
  if (id && file_identity(f) == id) memo[f.string()] = {*id, sha};
  return sha;
}

}  // namespace

Manifest hash_files(const std::vector<fs::path>& files) {
  Manifest m;
  for (const auto& f : files) m["data.sha256." + f.string()] = memo_sha256(f);
  return m;
}

Manifest capture_machine() {
  Manifest m = capture_system("/");
  m.merge(capture_env_vars());
  m.merge(capture_build());
  m.merge(capture_gpus());
  // Which BLAS the system's libblas.so.3 alternative points at (Debian).
  std::error_code ec;
  for (const char* alt : {"/etc/alternatives/libblas.so.3-x86_64-linux-gnu",
                          "/etc/alternatives/libblas.so.3-aarch64-linux-gnu"}) {
    auto target = fs::read_symlink(alt, ec);
    if (!ec) m["libraries.blas.alternative"] = target.string();
  }
  return m;
}

std::string side_text(const std::optional<std::string>& side) { return side ? *side : "(absent)"; }

std::vector<Difference> diff(const Manifest& a, const Manifest& b) {
  std::vector<Difference> out;
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  for (const auto& k : keys) {
    auto ia = a.find(k), ib = b.find(k);
    std::optional<std::string> va, vb;
    if (ia != a.end()) va = ia->second;
    if (ib != b.end()) vb = ib->second;
    if (va == vb) continue;
    out.push_back({k.substr(0, k.find('.')), k, va, vb});
  }
  std::stable_sort(out.begin(), out.end(), [](const Difference& x, const Difference& y) {
    size_t rx = group_rank(x.group), ry = group_rank(y.group);
    return rx != ry ? rx < ry : x.key < y.key;
  });
  return out;
}

}  // namespace trainscope::env
