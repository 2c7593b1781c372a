#include "trainscope/monitor/rapl.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace fs = std::filesystem;

namespace trainscope::monitor {
namespace {
bool read_u64(const fs::path& p, uint64_t& out, std::string* why = nullptr) {
  std::ifstream in(p);
  if (!in) {
    if (why) *why = p.string() + ": " + std::strerror(errno);
    return false;
  }
  in >> out;
  if (!in) {
    if (why) *why = p.string() + ": not a number";
    return false;
  }
  return true;
}
}  // namespace

Rapl::Rapl(fs::path root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    reason_ = root.string() + " does not exist (no RAPL driver: a VM, or a CPU without RAPL)";
    return;
  }
  // /sys/class/powercap lists packages (intel-rapl:0) and their subdomains
  // (intel-rapl:0:0) side by side, as symlinks.
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("intel-rapl:", 0) == 0 && fs::exists(e.path() / "energy_uj", ec))
      dirs.push_back(e.path());
  }
  if (dirs.empty()) {
    reason_ = "no intel-rapl:* domains under " + root.string();
    return;
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    RaplDomain dom;
    dom.dir = d;
    std::ifstream name(d / "name");
    std::getline(name, dom.name);
    std::string why;
    if (!read_u64(d / "energy_uj", dom.last_uj, &why) ||
        !read_u64(d / "max_energy_range_uj", dom.max_range_uj, &why)) {
      reason_ =
          "cannot read RAPL counters (" + why + "); reading energy_uj needs root on recent kernels";
      domains_.clear();
      return;
    }
    domains_.push_back(dom);
  }
}

void Rapl::update() {
  for (auto& d : domains_) {
    uint64_t now = 0;
    if (!read_u64(d.dir / "energy_uj", now)) continue;
    uint64_t delta = now >= d.last_uj ? now - d.last_uj : now + d.max_range_uj - d.last_uj;
    d.joules += static_cast<double>(delta) * 1e-6;
    d.last_uj = now;
  }
}

double Rapl::package_joules() const {
  double j = 0;
  for (const auto& d : domains_)
    if (d.name.rfind("package", 0) == 0) j += d.joules;
  return j;
}

double Rapl::dram_joules() const {
  double j = 0;
  for (const auto& d : domains_)
    if (d.name == "dram") j += d.joules;
  return j;
}

}  // namespace trainscope::monitor
