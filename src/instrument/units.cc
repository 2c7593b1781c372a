// The registry of units, and the loader of units built outside trainscope.
#include <dlfcn.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "trainscope/config/section.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"
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

namespace {

using Edges = std::map<std::string, std::set<std::string>>;  // unit -> units after it

bool names_all(const Unit& u) {
  return std::find(u.before.begin(), u.before.end(), "*") != u.before.end();
}

// Unit -> the units its declarations put after it (registered ones only).
Edges edges_of(const std::vector<Unit>& us) {
  Edges out;
  std::set<std::string> names;
  for (const auto& u : us) names.insert(u.name), out[u.name];
  for (const auto& u : us) {
    for (const auto& a : u.after)
      if (names.count(a) && a != u.name) out[a].insert(u.name);
    for (const auto& b : u.before)
      if (b != "*" && names.count(b) && b != u.name) out[u.name].insert(b);
    if (names_all(u))
      for (const auto& w : us)
        if (!names_all(w)) out[u.name].insert(w.name);
  }
  return out;
}

// The names left when every unit that starts or ends no path through the
// rest is taken away: the units of (and between) the cycles.
std::vector<std::string> cycle_names(Edges left) {
  for (bool pruned = true; pruned;) {
    pruned = false;
    for (auto it = left.begin(); it != left.end();) {
      const std::string& n = it->first;
      const bool has_in = std::any_of(left.begin(), left.end(),
                                      [&](const auto& e) { return e.second.count(n) > 0; });
      const bool has_out = std::any_of(it->second.begin(), it->second.end(),
                                       [&](const std::string& m) { return left.count(m) > 0; });
      if (has_in && has_out) {
        ++it;
        continue;
      }
      it = left.erase(it);
      pruned = true;
    }
  }
  std::vector<std::string> out;
  for (const auto& [n, _] : left) out.push_back(n);
  return out;
}

// `us` in the order their declarations give, ties in name order. Throws
// Error(kUsage) naming the units of a cycle.
std::vector<Unit> in_declared_order(std::vector<Unit> us) {
  Edges edges = edges_of(us);
  std::map<std::string, int> blockers;
  for (const auto& [n, _] : edges) blockers[n];
  for (const auto& [n, later] : edges)
    for (const auto& m : later) ++blockers[m];
  std::set<std::string> ready;
  for (const auto& [n, k] : blockers)
    if (k == 0) ready.insert(n);
  std::vector<std::string> order;
  while (!ready.empty()) {
    const std::string n = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(n);
    for (const auto& m : edges[n])
      if (--blockers[m] == 0) ready.insert(m);
    edges.erase(n);
  }
  if (order.size() < us.size())
    core::fail(core::ErrorKind::kUsage,
               "units {} are ordered in a cycle by their after and before lists; drop one of "
               "those declarations",
               fmt::join(cycle_names(edges), ", "));
  std::vector<Unit> out;
  for (const auto& n : order)
    for (auto& u : us)
      if (u.name == n) out.push_back(std::move(u));
  return out;
}

}  // namespace

void register_unit(Unit unit) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& u : r.units)
    if (u.name == unit.name)
      core::fail(core::ErrorKind::kUsage, "unit {} is registered twice", unit.name);
  std::vector<Unit> all = r.units;
  all.push_back(std::move(unit));
  r.units = in_declared_order(std::move(all));
}

std::vector<Unit> units() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.units;
}

namespace {

std::mutex g_load_mu;
std::set<std::string>& loaded_libraries() {
  static std::set<std::string> loaded;
  return loaded;
}

std::vector<std::string> unit_names() {
  std::vector<std::string> out;
  for (const auto& u : units()) out.push_back(u.name);
  return out;
}

// The library at `path` (a regular file, checked without opening it as
// anything else), loaded with its registrations' failures reported. Loaded
// by its absolute path: dlopen would look a bare file name up in the
// library path, not here.
std::vector<std::string> load_one(const std::string& path, const std::string& source) {
  const std::string shown = core::escape_for_display(path);
  const int fd = core::open_regular_file(path, source + " unit library");
  if (fd < 0)
    core::fail(core::ErrorKind::kUsage,
               "{}: cannot read unit library '{}' ({}); name shared "
               "libraries built against this trainscope, separated by ':'",
               source, shown, std::strerror(errno));
  ::close(fd);
  std::error_code ec;
  std::string file = std::filesystem::canonical(path, ec).string();
  if (ec) file = std::filesystem::absolute(path, ec).string();
  if (loaded_libraries().count(file)) return {};
  const auto units_before = unit_names();
  const size_t sections_before = config::sections().size();
  core::LoadErrors errors;
  // Its symbols stay its own (RTLD_LOCAL); the trainscope libraries it
  // links are the ones this process has mapped, so it registers into this
  // process's registries.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    core::fail(core::ErrorKind::kUsage,
               "{}: cannot load unit library '{}' ({}); build it "
               "against this trainscope and its torch",
               source, shown, core::escape_for_display(dlerror()));
  loaded_libraries().insert(file);
  if (auto kept = errors.take(); !kept.empty())
    core::fail(core::ErrorKind::kUsage, "{}: unit library '{}' did not register: {}", source, shown,
               kept.front());
  std::vector<std::string> added;
  for (const auto& name : unit_names())
    if (std::find(units_before.begin(), units_before.end(), name) == units_before.end())
      added.push_back(name);
  if (added.empty() && config::sections().size() == sections_before)
    core::fail(core::ErrorKind::kUsage,
               "{}: '{}' registers no unit and no config section (no "
               "TRAINSCOPE_UNIT line); name a unit's library",
               source, shown);
  return added;
}

}  // namespace

std::vector<std::string> load_units(const std::string& paths, const std::string& source) {
  std::lock_guard lock(g_load_mu);
  std::vector<std::string> added;
  size_t start = 0;
  while (start <= paths.size()) {
    const size_t end = std::min(paths.find(':', start), paths.size());
    if (end > start)
      for (auto& name : load_one(paths.substr(start, end - start), source))
        added.push_back(std::move(name));
    start = end + 1;
  }
  return added;
}

std::vector<std::string> load_units_from_environment() {
  const char* paths = std::getenv("TRAINSCOPE_UNITS");
  if (!paths || !*paths) return {};
  return load_units(paths, "TRAINSCOPE_UNITS");
}

void check_units(const Config& config, Source& source) {
  for (const auto& u : units())
    if (u.check) u.check(config, source);
}

void check_unit_settings(const std::vector<std::string>& sets, std::string_view what) {
  std::set<std::string> read;  // the sections of the units that attach
  for (const auto& u : units())
    if (u.with_own_metrics) read.insert(u.name);
  std::set<std::string> sections;
  for (const auto& s : config::sections())
    if (read.contains(s.name)) sections.insert(s.name + ".*");
  for (const std::string& line : sets) {
    const std::string key = line.substr(0, line.find('='));
    if (read.contains(key.substr(0, key.find('.')))) continue;
    core::fail(core::ErrorKind::kUsage,
               "{} setting '{}': no unit it attaches reads '{}' (they read {}); a setting of the "
               "script's own goes to trainscope.config()",
               what, core::escape_for_display(line), core::escape_for_display(key),
               fmt::join(sections, ", "));
  }
}

}  // namespace trainscope::instrument
