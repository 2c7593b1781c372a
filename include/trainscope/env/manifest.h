// The environment manifest: everything about the machine, its drivers,
// libraries, threads and numerics settings that can change a training result.
//
// A manifest is a flat map "group.key" -> value. Groups: hardware, driver,
// libraries, system, threads, flags, env (environment variables that change
// numerics), data (SHA-256 of files read), build (trainscope itself), git.
// Flat keys make manifests easy to store, diff and print.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainscope::env {

// The most bytes of a user's environment entry's key, and of its value (a
// tag's or a param's limit).
inline constexpr size_t kMaxUserEntryBytes = 4096;

// Why `key` = `value` cannot be an entry a user adds to a run's environment
// (Python's start_run(environment=...)): not a key (core::text_problem: 1 to 4096
// bytes of UTF-8 text, no control character, not only blanks), or in a
// group trainscope measures itself (hardware, driver, libraries, system,
// threads, flags, env, config, seeds, build, git, packages, python,
// process), which readers trust (env recreate pins packages.*) and a
// user's entry would overwrite; `data` (the SHA-256 of files read) is the
// script's to give (trainscope.inputs); or a value over kMaxUserEntryBytes.
// A whole message; nullopt for one it takes.
std::optional<std::string> user_entry_problem(std::string_view key, std::string_view value);

// "group.key" -> value, as a run's environment records it.
using Manifest = std::map<std::string, std::string>;

// What /proc/cpuinfo says of this machine's CPUs (parse_cpuinfo); empty
// strings and 0 where it does not say.
struct CpuInfo {
  std::string arch;        // x86_64, aarch64, ...
  std::string vendor;      // GenuineIntel, AuthenticAMD, or the Arm implementer
  std::string model_name;  // "AMD EPYC 7B13", or Arm "implementer/part" when unnamed
  std::string family, model, stepping, microcode;  // x86; Arm: variant/part/revision
  std::vector<std::string> flags;                  // x86 "flags" or Arm "Features"
  int logical = 0;
  int physical = 0;  // distinct (physical id, core id) pairs; logical when unknown
  int sockets = 0;
};

// Parses the text of /proc/cpuinfo (x86 or Arm).
CpuInfo parse_cpuinfo(std::string_view text);

// The flags that matter for numerics: avx, avx2, avx512*, fma, f16c, and Arm
// asimd/sve/fphp, space-separated in a stable order.
std::string numerics_flags(const CpuInfo& cpu);

// float32 lanes of the widest vector unit the flags name: 16 with avx512f, 8
// with avx or avx2, else 4 (SSE, Arm asimd; SVE's length is not in the flags).
// Kernels such as oneDNN's convolutions work on channels in blocks of this
// many, so a layer with fewer channels wastes lanes (see the cost model).
int simd_float_lanes(const CpuInfo& cpu);
// The same for this machine (/proc/cpuinfo; 4 when it cannot be read).
int simd_float_lanes();

// Hardware and OS facts read under `root` ("/" on a live system; a folder
// holding proc/ and sys/ snapshots in tests).
Manifest capture_system(const std::filesystem::path& root = "/");
// Container (system.container: none, docker, podman, kubernetes, ...; and
// system.container.image where visible), virtual machine
// (system.virtualization: the hypervisor's CPUID signature, e.g. KVMKVMKVM;
// system.virtualization.machine from DMI) and the cgroup memory limit
// (system.memory.cgroup_limit). Part of capture_system; `root` as there.
Manifest capture_isolation(const std::filesystem::path& root, const CpuInfo& cpu);

// OMP_*, MKL_*, OPENBLAS_*, KMP_*, GOMP_*, CUBLAS_*, CUDA_*, CUDNN_*,
// NVIDIA_TF32_OVERRIDE, TF_*, PYTORCH_*, TORCH_*, LD_PRELOAD, LD_LIBRARY_PATH:
// "env.NAME" -> value, "unset" for the well-known ones that are absent.
Manifest capture_env_vars();

// trainscope's version, commit and compiler.
Manifest capture_build();

// The state of the git work tree holding `path`: git.commit, git.root,
// git.dirty, git.diff_sha256 (SHA-256 of `diff`; empty when clean) and
// git.untracked_files (how many) in `manifest`; the tracked changes against
// HEAD as `git diff --binary HEAD` writes them (what `git apply` reads);
// the untracked files that .gitignore does not hide. All empty when `path`
// is not in a repository.
struct GitState {
  Manifest manifest;
  std::string diff;
  std::vector<std::string> untracked;
};
// The GitState of `path` now: runs git (a few processes) in its folder;
// never throws for a folder outside a repository or a missing git.
GitState capture_git_state(const std::filesystem::path& path);
// Captures the git state of `path` now and keeps it for git_state(): a
// study's warm worker calls this once when it warms, so that every training
// it forks records the tree as it was when the study started, without four
// git processes each (and the same state, whenever each run starts).
void warm_git_state(const std::filesystem::path& path);
// What warm_git_state() kept when it was called with the same path in this
// process or one it was forked from; otherwise capture_git_state(path).
GitState git_state(const std::filesystem::path& path);
// Its manifest alone.
Manifest capture_git(const std::filesystem::path& path);

// GPUs through NVML, loaded at run time from $TRAINSCOPE_NVML_LIBRARY or
// libnvidia-ml.so.1; CUDA runtime and cuDNN versions when those load.
// Without NVML: "driver.gpu" = "none (<reason>)".
Manifest capture_gpus();

// SHA-256 of each file: "data.sha256.<path>" -> hex. A file this process
// hashed before is not read again while its device, inode, size and
// modification and change times are the same (the kernel sets the change
// time on every write): a study's warm worker hashes the dataset once and
// the trainings it forks take the hashes from it.
Manifest hash_files(const std::vector<std::filesystem::path>& files);

// Everything above for this process (no git, no data).
Manifest capture_machine();

// One key whose value differs between two manifests (diff()).
struct Difference {
  std::string group;  // first component of the key
  std::string key;
  // nullopt when that side lacks the key: a value "(absent)" stood for
  // none, and an entry recorded as that text differed from nothing
  // (twenty-eighth hunt, A-D4).
  std::optional<std::string> a, b;
};

// A side of a Difference as a table shows it: its value, "(absent)" for none.
std::string side_text(const std::optional<std::string>& side);

// Every key whose value differs, ordered by group (hardware, driver,
// libraries, system, threads, flags, env, data, config, seeds, build, git,
// then others) and key.
std::vector<Difference> diff(const Manifest& a, const Manifest& b);

}  // namespace trainscope::env
