// The Debian packages the process's mapped objects come from, read from
// dpkg's database directly (no dpkg-query: one costs ~0.4 s), with the
// answers cached while dpkg's status file is unchanged.
#include "trainscope/env/packages.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "files.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::env {

namespace {

using files::read_text;

// An installed package: "name:arch", its version and when it was installed
// (its info/*.list file's mtime, as snapshot.debian.org names a moment).
struct Owner {
  std::string key;
  std::string version;
  std::string installed;
};

// What the cache and a cold lookup both yield: path -> owner (key "" when no
// installed package owns it) and dpkg's native architecture.
struct Owners {
  std::string native_arch;
  std::map<std::string, Owner> by_path;
};

// The names dpkg may list a path under: with /usr merged, /usr/lib/x.so is
// also /lib/x.so (and the other way round).
std::vector<std::string> aliases(const std::string& path) {
  std::vector<std::string> out = {path};
  for (const char* dir : {"/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/"}) {
    const std::string usr = std::string("/usr") + dir;
    if (path.rfind(usr, 0) == 0) out.push_back(path.substr(4));
    if (path.rfind(dir, 0) == 0) out.push_back("/usr" + path);
  }
  return out;
}

// dpkg's status file: every installed package's "name:arch" -> version, the
// keys under each bare name, and dpkg's own (native) architecture.
struct Status {
  std::map<std::string, std::string> version;
  std::multimap<std::string, std::string> keys_by_name;
  std::string native_arch;
};

Status read_status(const fs::path& file) {
  Status s;
  std::istringstream in(read_text(file));
  std::string line, name, arch, version, state;
  auto flush = [&] {
    if (!name.empty() && state.ends_with(" installed")) {
      const std::string key = name + ":" + arch;
      s.version[key] = version;
      s.keys_by_name.emplace(name, key);
      if (name == "dpkg") s.native_arch = arch;
    }
    name.clear(), arch.clear(), version.clear(), state.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) flush();
    if (line.rfind("Package: ", 0) == 0) name = line.substr(9);
    if (line.rfind("Architecture: ", 0) == 0) arch = line.substr(14);
    if (line.rfind("Version: ", 0) == 0) version = line.substr(9);
    if (line.rfind("Status: ", 0) == 0) state = line.substr(8);
  }
  flush();
  return s;
}

// Reads every info/*.list until each wanted path has an owner: path -> the
// list's stem ("libc6:amd64", or "python3-torch" for a package that is not
// Multi-Arch: same).
std::map<std::string, std::string> scan_lists(const fs::path& info,
                                              const std::vector<std::string>& wanted) {
  std::unordered_map<std::string, std::string> alias_of;  // alias -> wanted path
  for (const auto& p : wanted)
    for (auto& a : aliases(p)) alias_of.emplace(std::move(a), p);
  std::map<std::string, std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(info, ec)) {
    if (found.size() == wanted.size()) break;
    const fs::path& f = entry.path();
    if (f.extension() != ".list") continue;
    const std::string text = read_text(f);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      auto it = alias_of.find(text.substr(pos, nl - pos));
      if (it != alias_of.end()) found.emplace(it->second, f.stem().string());
      pos = nl + 1;
    }
  }
  return found;
}

// "<mtime ns> <size>" of dpkg's status file: every install, upgrade and
// removal rewrites it, so the cache is valid while this is unchanged.
std::string status_stamp(const fs::path& status) {
  std::error_code ec;
  const auto size = fs::file_size(status, ec);
  const auto time = fs::last_write_time(status, ec);
  if (ec) return "";
  return std::to_string(time.time_since_epoch().count()) + " " + std::to_string(size);
}

fs::path cache_file(const PackageOptions& o) {
  const fs::path dir = o.cache_dir.empty() ? core::user_cache_dir() : fs::path(o.cache_dir);
  return dir.empty() ? fs::path() : dir / "dpkg-owners.tsv";
}

constexpr std::string_view kCacheMagic = "trainscope-dpkg-owners 3";

// The cache: a header "trainscope-dpkg-owners 3\t<arch>\t<stamp>\t<sha256>",
// the SHA-256 of every line after it, then one
// "path\tname:arch\tversion\tinstalled" line per path asked about (all but
// the path empty when no package owns it). Empty when absent, stale, or
// its bytes are not the ones written (what it says becomes a run's
// packages, and env recreate's Dockerfile).
Owners read_cache(const fs::path& file, const std::string& stamp) {
  Owners o;
  const std::string text = read_text(file);
  const size_t body = std::min(text.find('\n'), text.size());
  std::istringstream head(text.substr(0, body));
  std::string magic, arch, stored, sum;
  std::getline(head, magic, '\t'), std::getline(head, arch, '\t'), std::getline(head, stored, '\t');
  std::getline(head, sum);
  const std::string_view rest = std::string_view(text).substr(std::min(body + 1, text.size()));
  if (magic != kCacheMagic || stored != stamp || stamp.empty() || sum != core::sha256_hex(rest))
    return o;
  std::istringstream in{std::string(rest)};
  std::string line;
  o.native_arch = arch;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string path;
    Owner owner;
    std::getline(fields, path, '\t'), std::getline(fields, owner.key, '\t');
    std::getline(fields, owner.version, '\t'), std::getline(fields, owner.installed);
    if (!path.empty()) o.by_path[path] = owner;
  }
  return o;
}

// Written to a temporary file and renamed, so concurrent runs never read half
// a cache; a folder that cannot be written only means no cache.
void write_cache(const fs::path& file, const std::string& stamp, const Owners& o) {
  if (file.empty() || stamp.empty()) return;
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.string() + "." + std::to_string(getpid()) + ".tmp";
  {
    std::ostringstream body;
    for (const auto& [path, owner] : o.by_path)
      body << path << "\t" << owner.key << "\t" << owner.version << "\t" << owner.installed << "\n";
    std::ofstream out(tmp);
    if (!out) return;
    out << kCacheMagic << "\t" << o.native_arch << "\t" << stamp << "\t"
        << core::sha256_hex(body.str()) << "\n"
        << body.str();
    if (!out.flush()) return fs::remove(tmp, ec), void();
  }
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);
}

// A file's mtime as snapshot.debian.org names a moment: 20250520T143000Z.
std::string mtime_stamp(const fs::path& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) return "";
  std::tm tm{};
  gmtime_r(&st.st_mtime, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Looks up the paths the cache lacks and adds them to it.
void look_up(const PackageOptions& options, const std::vector<std::string>& missing,
             Owners& owners) {
  const Status status = read_status(options.dpkg_dir / "status");
  owners.native_arch = status.native_arch;
  const auto stems = scan_lists(options.dpkg_dir / "info", missing);
  for (const auto& path : missing) {
    Owner owner;
    if (auto it = stems.find(path); it != stems.end()) {
      std::string key = it->second;
      if (key.find(':') == std::string::npos) {
        auto k = status.keys_by_name.find(key);
        if (k != status.keys_by_name.end()) key = k->second;
      }
      if (auto v = status.version.find(key); v != status.version.end())
        owner = {key, v->second, mtime_stamp(options.dpkg_dir / "info" / (it->second + ".list"))};
      // (a listed but not installed package owns nothing)
    }
    owners.by_path[path] = owner;
  }
}

std::string base_name(const std::string& path) { return fs::path(path).filename().string(); }

}  // namespace

std::vector<std::string> mapped_objects(std::string_view maps) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::istringstream in{std::string(maps)};
  std::string line;
  while (std::getline(in, line)) {
    // address perms offset dev inode path
    std::istringstream fields(line);
    std::string address, perms, offset, dev, inode, path;
    fields >> address >> perms >> offset >> dev >> inode;
    std::getline(fields >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    if (path.ends_with(" (deleted)") || path.rfind("/memfd:", 0) == 0) continue;
    if (seen.insert(path).second) out.push_back(path);
  }
  return out;
}

Manifest packages_of(const std::vector<std::string>& objects, const PackageOptions& options) {
  const fs::path status = options.dpkg_dir / "status";
  std::error_code ec;
  if (!fs::exists(status, ec))
    return {{"packages.source", "no dpkg database at " + options.dpkg_dir.string()}};
  const std::string stamp = status_stamp(status);
  const fs::path cache = cache_file(options);
  Owners owners = cache.empty() ? Owners{} : read_cache(cache, stamp);
  std::vector<std::string> missing;
  for (const auto& p : objects)
    if (!owners.by_path.count(p)) missing.push_back(p);
  if (!missing.empty() || owners.native_arch.empty()) {
    look_up(options, missing, owners);
    write_cache(cache, stamp, owners);
  }
  Manifest m;
  m["packages.architecture"] = owners.native_arch;
  std::string unowned;
  // In name order, not the order the loader mapped them (which differs from
  // one process to the next): two runs of the same libraries then agree.
  std::vector<std::string> sorted = objects;
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string& a, const std::string& b) { return base_name(a) < base_name(b); });
  for (const auto& p : sorted) {
    const Owner& o = owners.by_path.at(p);
    if (o.key.empty()) {
      unowned += (unowned.empty() ? "" : " ") + p;
      continue;
    }
    m["packages.debian." + o.key] = o.version;
    if (!o.installed.empty()) m["packages.installed." + o.key] = o.installed;
    std::string& names = m["packages.objects." + o.key];
    names += (names.empty() ? "" : " ") + base_name(p);
  }
  m["packages.unowned"] = unowned.empty() ? "none" : unowned;
  return m;
}

Manifest capture_loaded_packages(const PackageOptions& options) {
  return packages_of(mapped_objects(read_text("/proc/self/maps")), options);
}

}  // namespace trainscope::env
