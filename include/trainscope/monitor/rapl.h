// CPU energy from Intel/AMD RAPL counters under /sys/class/powercap.
//
// Each domain (package-N, dram, core, uncore) exposes energy_uj, a counter
// that wraps at max_energy_range_uj. Reading twice and taking the difference
// (adding the range when the counter went down) gives joules in between.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace trainscope::monitor {

struct RaplDomain {
  std::string name;  // "package-0", "dram", ...
  std::filesystem::path dir;
  uint64_t max_range_uj = 0;
  uint64_t last_uj = 0;
  double joules = 0;  // accumulated since open
};

class Rapl {
 public:
  // Discovers domains under `root`. available() is false, with reason(),
  // when there are none or they cannot be read (permissions, VM, AMD without
  // the driver).
  explicit Rapl(std::filesystem::path root = "/sys/class/powercap");
  bool available() const { return !domains_.empty(); }
  const std::string& reason() const { return reason_; }
  // Reads every counter and accumulates the energy since the last call,
  // handling wrap-around.
  void update();
  const std::vector<RaplDomain>& domains() const { return domains_; }
  // Joules of all package domains (which include their cores), plus DRAM.
  double package_joules() const;
  double dram_joules() const;

 private:
  std::vector<RaplDomain> domains_;
  std::string reason_;
};

}  // namespace trainscope::monitor
