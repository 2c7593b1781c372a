#include "trainscope/env/cpus.h"

#include <sched.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "files.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::env {

namespace {

std::set<int> affinity(const fs::path& root) {
  if (root == "/") {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      std::set<int> out;
      for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) out.insert(i);
      return out;
    }
  }
  return parse_cpu_list(files::read_line(root / "sys/devices/system/cpu/online"));
}

int physical_cores(const fs::path& root, const std::set<int>& cpus) {
  std::set<std::pair<std::string, std::string>> cores;
  for (int c : cpus) {
    const fs::path topo =
        root / "sys/devices/system/cpu" / ("cpu" + std::to_string(c)) / "topology";
    std::string pkg = files::read_line(topo / "physical_package_id"),
                core = files::read_line(topo / "core_id");
    // Without topology (some containers), every CPU counts as a core.
    cores.emplace(pkg, core.empty() ? "cpu" + std::to_string(c) : core);
  }
  return static_cast<int>(cores.size());
}

// The quota of the process's cgroup and its ancestors (the smallest
// applies): cgroup v2 cpu.max, else v1 cpu.cfs_quota_us / cpu.cfs_period_us.
double cgroup_quota(const fs::path& root) {
  std::ifstream in(root / "proc/self/cgroup");
  std::string line, v2_path, v1_path;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
    auto colon = line.find(':');
    auto second = line.find(':', colon + 1);
    if (colon != std::string::npos && second != std::string::npos) {
      std::string controllers = line.substr(colon + 1, second - colon - 1);
      if (controllers.find("cpu") != std::string::npos &&
          controllers.find("cpuset") == std::string::npos)
        v1_path = line.substr(second + 1);
    }
  }
  double best = 0;
  auto consider = [&](double q) {
    if (q > 0 && (best == 0 || q < best)) best = q;
  };
  for (fs::path p = fs::path(v2_path); !v2_path.empty(); p = p.parent_path()) {
    consider(
        parse_cpu_max(files::read_line(root / "sys/fs/cgroup" / p.relative_path() / "cpu.max")));
    if (p == p.parent_path() || p.empty()) break;
  }
  if (!v1_path.empty()) {
    const fs::path dir = root / "sys/fs/cgroup/cpu" / fs::path(v1_path).relative_path();
    const std::string q = files::read_line(dir / "cpu.cfs_quota_us"),
                      t = files::read_line(dir / "cpu.cfs_period_us");
    if (!q.empty() && !t.empty() && std::stod(q) > 0 && std::stod(t) > 0)
      consider(std::stod(q) / std::stod(t));
  }
  return best;
}

}  // namespace

int CpuBudget::threads() const {
  int n = std::max(1, physical);
  if (quota > 0) n = std::min(n, std::max(1, static_cast<int>(std::floor(quota))));
  return n;
}

std::set<int> parse_cpu_list(std::string_view text) {
  std::set<int> out;
  for (const std::string& part : core::split_list(text)) {
    try {
      auto dash = part.find('-');
      const int a = std::stoi(part.substr(0, dash));
      const int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      for (int i = a; i <= b && i - a < 4096; ++i) out.insert(i);
    } catch (const std::exception&) {
      return {};
    }
  }
  return out;
}

double parse_cpu_max(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return 0;
  try {
    const double q = std::stod(quota), p = std::stod(period);
    return q > 0 && p > 0 ? q / p : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

CpuBudget cpu_budget(const fs::path& root) {
  CpuBudget b;
  const std::set<int> cpus = affinity(root);
  b.logical = static_cast<int>(cpus.size());
  b.physical = physical_cores(root, cpus);
  b.quota = cgroup_quota(root);
  return b;
}

}  // namespace trainscope::env
