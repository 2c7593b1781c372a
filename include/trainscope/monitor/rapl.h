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

// One RAPL domain and the energy accumulated by Rapl::update.
struct RaplDomain {
  std::string name;  // "package-0", "dram", ...
  std::filesystem::path dir;
  uint64_t max_range_uj = 0;
  uint64_t last_uj = 0;
  double joules = 0;  // accumulated since open
};

// The domains of this machine and their energy since construction. Not
// thread-safe: one thread calls update() and reads (the sampler's).
class Rapl {
 public:
  // Discovers domains under `root`. available() is false, with reason(),
  // when there are none or they cannot be read (permissions, VM, AMD without
  // the driver).
  explicit Rapl(std::filesystem::path root = "/sys/class/powercap");
  // Whether any domain could be read; when not, reason() says why (empty
  // when available).
  bool available() const { return !domains_.empty(); }
  const std::string& reason() const { return reason_; }
  // Reads every counter and accumulates the energy since the last call,
  // handling wrap-around.
  void update();
  // The domains found, sorted by directory; valid while this Rapl is.
  const std::vector<RaplDomain>& domains() const { return domains_; }
  // Joules of all package domains (which include their cores), plus DRAM.
  double package_joules() const;
  // Joules of the DRAM domains (0 where there is none).
  double dram_joules() const;

 private:
  std::vector<RaplDomain> domains_;
  std::string reason_;
};

}  // namespace trainscope::monitor
