// The registry of units.
#include <algorithm>
#include <mutex>

#include "trainscope/core/error.h"
#include "trainscope/instrument/unit.h"

namespace trainscope::instrument {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<Unit> units;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_unit(Unit unit) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& u : r.units)
    if (u.name == unit.name)
      core::fail(core::ErrorKind::kUsage, "unit {} is registered twice", unit.name);
  auto at = std::upper_bound(r.units.begin(), r.units.end(), unit.order,
                             [](int order, const Unit& u) { return order < u.order; });
  r.units.insert(at, std::move(unit));
}

std::vector<Unit> units() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.units;
}

void check_units(const Config& config, Source& source) {
  for (const auto& u : units())
    if (u.check) u.check(config, source);
}

}  // namespace trainscope::instrument
