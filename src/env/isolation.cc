// Where a process runs: a container (and its runtime and image), a virtual
// machine (and its hypervisor), and the cgroup's memory limit. All change
// speed, and sometimes results, and none shows in the CPU model.
#include <cpuid.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "files.h"
#include "trainscope/env/manifest.h"

namespace fs = std::filesystem;

namespace trainscope::env {

namespace {

// `key="value"` from /run/.containerenv (podman writes image, name, engine).
std::string containerenv_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) != 0) continue;
    std::string v = line.substr(key.size() + 1);
    std::erase(v, '"');
    return v;
  }
  return "";
}

void detect_container(const fs::path& root, bool live, Manifest& m) {
  std::error_code ec;
  std::string runtime = "none", image;
  std::string cgroup =
      files::read_text(root / "proc/1/cgroup") + files::read_text(root / "proc/self/cgroup");
  if (fs::exists(root / "run/.containerenv", ec)) {
    std::string env = files::read_text(root / "run/.containerenv");
    runtime = "podman";
    image = containerenv_value(env, "image");
  } else if (fs::exists(root / ".dockerenv", ec)) {
    runtime = "docker";
  } else if (cgroup.find("kubepods") != std::string::npos) {
    runtime = "kubernetes";
  } else if (cgroup.find("docker") != std::string::npos) {
    runtime = "docker";
  } else if (cgroup.find("containerd") != std::string::npos) {
    runtime = "containerd";
  } else if (cgroup.find("lxc") != std::string::npos) {
    runtime = "lxc";
  } else if (const char* c = live ? std::getenv("container") : nullptr; c && *c) {
    runtime = c;  // systemd's convention (nspawn, podman, ...)
  }
  m["system.container"] = runtime;
  if (!image.empty()) m["system.container.image"] = image;
}

// The hypervisor's CPUID signature (leaf 0x40000000): "KVMKVMKVM",
// "Microsoft Hv", "VMwareVMware", "XenVMMXenVMM", ...
std::string cpuid_hypervisor() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(1, a, b, c, d);
  if (!(c & (1u << 31))) return "";
  __cpuid(0x40000000, a, b, c, d);
  char sig[13] = {};
  std::memcpy(sig, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  std::string s(sig);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
#else
  return "";
#endif
}

void detect_vm(const fs::path& root, bool live, const CpuInfo& cpu, Manifest& m) {
  bool flagged = std::find(cpu.flags.begin(), cpu.flags.end(), "hypervisor") != cpu.flags.end();
  std::string sig = live ? cpuid_hypervisor() : "";
  std::string vendor = files::read_line(root / "sys/class/dmi/id/sys_vendor");
  std::string product = files::read_line(root / "sys/class/dmi/id/product_name");
  m["system.virtualization"] = !sig.empty() ? sig : flagged ? "yes (hypervisor flag)" : "none";
  if (flagged || !sig.empty()) {
    std::string dmi = vendor + (product.empty() ? "" : " " + product);
    m["system.virtualization.machine"] = dmi.empty() ? "unknown" : dmi;
  }
}

// cgroup v2 memory.max of the process's cgroup (the smallest up the tree).
void detect_memory_limit(const fs::path& root, Manifest& m) {
  std::ifstream in(root / "proc/self/cgroup");
  std::string line, path;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  int64_t best = 0;
  for (fs::path p = path; !path.empty(); p = p.parent_path()) {
    std::string v = files::read_line(root / "sys/fs/cgroup" / p.relative_path() / "memory.max");
    if (!v.empty() && v != "max") {
      int64_t b = std::stoll(v);
      if (best == 0 || b < best) best = b;
    }
    if (p == p.parent_path() || p.empty()) break;
  }
  m["system.memory.cgroup_limit"] =
      best > 0 ? fmt::format("{:.2f} GiB", static_cast<double>(best) / (1 << 30)) : "none";
}

}  // namespace

Manifest capture_isolation(const fs::path& root, const CpuInfo& cpu) {
  Manifest m;
  const bool live = root == "/";
  detect_container(root, live, m);
  detect_vm(root, live, cpu, m);
  detect_memory_limit(root, m);
  return m;
}

}  // namespace trainscope::env
