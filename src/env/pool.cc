// Pinned versions apt's index no longer lists, found in the archives' pools
// (where their .deb would be, fetched once into a cache and checked), or
// rebuilt with dpkg-repack from this machine's installed files when no pool
// has them.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "process.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/util.h"
#include "trainscope/env/recreate.h"

namespace fs = std::filesystem;

namespace trainscope::env {

// A named namespace of its own: this file shares a unity batch with
// recreate.cc, whose anonymous helpers have short names too.
namespace pool_lookup {

// Percent-encodes what apt encodes in a pool file's URL.
std::string url_encode(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "%7e";
    } else if (c == '+') {
      out += "%2b";
    } else if (c == ':') {
      out += "%3a";
    } else {
      out += c;
    }
  }
  return out;
}

std::string folder_of(const std::string& url) { return url.substr(0, url.rfind('/') + 1); }

// The longest of `archives` that `url` starts with ("" when none).
std::string archive_of(const std::string& url, const std::vector<std::string>& archives) {
  std::string best;
  for (const auto& a : archives)
    if (url.rfind(a, 0) == 0 && a.size() > best.size()) best = a;
  return best;
}

// How apt names the package in a query: name:arch for a foreign
// architecture, else the name.
std::string query_name(const PinnedPackage& p, const std::string& native) {
  return p.arch.empty() || p.arch == native || p.arch == "all" ? p.name : p.name + ":" + p.arch;
}

std::string run(const std::vector<std::string>& args, int* status = nullptr) {
  std::vector<std::string> a = {"env", "LC_ALL=C"};
  a.insert(a.end(), args.begin(), args.end());
  int st = -1;
  std::string out = process::capture(a, &st, true);
  if (status) *status = st;
  return out;
}

bool ran(int status) { return status != -1 && !(WIFEXITED(status) && WEXITSTATUS(status) == 127); }

// Every version apt's index lists of these packages (apt-cache madison:
// "  name | version | URI suite/component arch Packages"), by name.
std::map<std::string, std::set<std::string>> index_versions(const std::vector<std::string>& names) {
  std::vector<std::string> args = {"apt-cache", "madison"};
  args.insert(args.end(), names.begin(), names.end());
  int st = -1;
  const std::string out = run(args, &st);
  if (!ran(st))
    throw core::Error("apt-cache cannot be run here: --check needs Debian's apt",
                      core::ErrorKind::kCommandNotFound);
  std::map<std::string, std::set<std::string>> versions;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name, bar1, version, bar2;
    if (fields >> name >> bar1 >> version >> bar2 && bar1 == "|" && bar2 == "|" &&
        line.ends_with(" Packages"))
      versions[name].insert(version);
  }
  return versions;
}

// The URL of each of these name=version (apt-get download --print-uris:
// "'URL' file size hash"), by package name (the file's name up to '_').
// apt prints nothing when it cannot find one of them, so then each package's
// versions are asked again on their own.
std::map<std::string, std::vector<std::string>> index_urls(
    const std::map<std::string, std::vector<std::string>>& pins_by_name) {
  std::map<std::string, std::vector<std::string>> urls;
  auto ask = [&urls](const std::vector<std::string>& pins) {
    std::vector<std::string> args = {"apt-get", "download", "--print-uris"};
    args.insert(args.end(), pins.begin(), pins.end());
    int st = -1;
    std::istringstream in(run(args, &st));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '\'') continue;
      const size_t end = line.find('\'', 1);
      if (end == std::string::npos) continue;
      const std::string url = line.substr(1, end - 1);
      const std::string file = url.substr(url.rfind('/') + 1);
      urls[file.substr(0, file.find('_'))].push_back(url);
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
  };
  std::vector<std::string> all;
  for (const auto& [name, pins] : pins_by_name) all.insert(all.end(), pins.begin(), pins.end());
  if (ask(all)) return urls;
  urls.clear();
  for (const auto& [name, pins] : pins_by_name) ask(pins);
  return urls;
}

// The archive URIs apt knows ("http://deb.debian.org/debian/").
std::vector<std::string> archives() {
  std::istringstream in(run({"apt-get", "indextargets", "--format", "$(REPO_URI)"}));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.find("://") == std::string::npos) continue;
    if (line.back() != '/') line += '/';
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(line);
  }
  return out;
}

// One curl HEAD request per URL (one process, one connection per host):
// the URLs that answer 200. Empty with a warning, and `searched` false, when
// curl is missing or reaches none of them.
std::set<std::string> existing(const std::vector<std::string>& urls, bool& searched) {
  searched = false;
  std::vector<std::string> args = {"curl", "-sIL", "--connect-timeout", "15", "--max-time",
                                   "60",   "-w",   "%{http_code}\\n"};
  for (const auto& u : urls) {
    args.push_back("-o");
    args.push_back("/dev/null");
    args.push_back(u);
  }
  int st = -1;
  const std::string out = run(args, &st);
  if (!ran(st)) {
    core::log_warn(
        "curl is not installed here, so the archives' pools were not searched for the versions "
        "apt's index no longer lists: install it (apt-get install curl)");
    return {};
  }
  std::set<std::string> found;
  bool reached = false;
  std::istringstream in(out);
  size_t i = 0;
  for (std::string code; i < urls.size() && std::getline(in, code); ++i) {
    reached |= code != "000";
    if (code == "200") found.insert(urls[i]);
  }
  searched = reached;
  if (!reached)
    core::log_warn(
        "no archive answered (curl HEAD {} ...): the archives' pools were not searched; check "
        "the network",
        urls.front());
  return found;
}

fs::path cache_dir(const PoolOptions& o) {
  if (!o.cache_dir.empty()) return fs::absolute(o.cache_dir);
  if (const fs::path dir = core::user_cache_dir(); !dir.empty()) return dir / "debs";
  return fs::temp_directory_path() / "trainscope-debs";
}

// Whether `file` is this package, version and architecture (dpkg-deb -f);
// else why not.
std::string verify(const fs::path& file, const PinnedPackage& p, const std::string& native) {
  int st = -1;
  const std::string out =
      run({"dpkg-deb", "-f", file.string(), "Package", "Version", "Architecture"}, &st);
  const std::string want = "Package: " + p.name + "\nVersion: " + p.version +
                           "\nArchitecture: " + (p.arch.empty() ? native : p.arch) + "\n";
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && out == want) return "";
  return "dpkg-deb -f says " + (out.empty() ? std::string("nothing") : out);
}

// Fetches `url` into `file` (through a temporary name, so that a broken
// download is never reused); "" or curl's error.
std::string download(const std::string& url, const fs::path& file) {
  const fs::path part = file.string() + ".part-" + std::to_string(getpid());
  int st = -1;
  const std::string out = run({"curl", "-fsSL", "--retry", "2", "--connect-timeout", "15",
                               "--max-time", "600", "-o", part.string(), url},
                              &st);
  std::error_code ec;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    fs::rename(part, file, ec);
    if (!ec) return "";
  }
  fs::remove(part, ec);
  return out.empty() ? "curl failed" : out.substr(0, out.find('\n'));
}

// The pool file of p at `url`, in the cache (fetched unless a good copy is
// there); false with a warning when it cannot be had.
bool fetch(PinnedPackage& p, const std::string& url, const fs::path& dir, const std::string& native,
           const std::string& progress) {
  const fs::path file = dir / pool_file_name(p, native);
  std::error_code ec;
  if (fs::exists(file, ec) && verify(file, p, native).empty()) {
    core::log_info("{} {}: in the cache", progress, file.filename().string());
  } else {
    core::log_info("{} fetching {}", progress, url);
    if (std::string why = download(url, file); !why.empty()) {
      core::log_warn("cannot fetch {}: {}", url, why);
      return false;
    }
    if (std::string why = verify(file, p, native); !why.empty()) {
      core::log_warn("{} is not {}: {}", url, p.pin, why);
      fs::remove(file, ec);
      return false;
    }
  }
  p.pool_url = url;
  p.pool_file = file.string();
  p.pool_sha256 = core::sha256_file(file);
  return true;
}

// name:arch, as dpkg-query and dpkg-repack take it ("all" too).
std::string dpkg_name(const PinnedPackage& p, const std::string& native) {
  return p.name + ":" + (p.arch.empty() ? native : p.arch);
}

// The installed "version architecture" of each of these name:arch, by that
// name (one dpkg-query -W); a package not installed is absent.
std::map<std::string, std::string> installed_versions(const std::vector<std::string>& names) {
  std::vector<std::string> args = {"dpkg-query", "-W",
                                   "-f=${db:Status-Abbrev}|${Package}:${Architecture}|${Version} "
                                   "${Architecture}\n"};
  args.insert(args.end(), names.begin(), names.end());
  int st = -1;
  std::istringstream in(run(args, &st));
  if (!ran(st))
    throw core::Error("dpkg-query cannot be run here: --check needs Debian's dpkg",
                      core::ErrorKind::kCommandNotFound);
  std::map<std::string, std::string> out;
  for (std::string line; std::getline(in, line);) {
    const size_t bar = line.find('|'), bar2 = line.find('|', bar + 1);
    if (line.rfind("ii", 0) != 0 || bar2 == std::string::npos) continue;
    out[line.substr(bar + 1, bar2 - bar - 1)] = line.substr(bar2 + 1);
  }
  return out;
}

// Rebuilds p's installed files as a .deb (dpkg-repack, under fakeroot when
// not root) in a folder of its own under `dir`, checks it and moves it to
// dir/<pool file name>; that path, or "" with a warning.
std::string repack(const PinnedPackage& p, const fs::path& dir, const std::string& native) {
  const fs::path work = dir / (".repack-" + std::to_string(getpid()));
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  // dpkg-repack writes into the current folder: env -C runs it in `work`.
  std::vector<std::string> args = {"env", "-C", work.string(), "LC_ALL=C"};
  // fakeroot -u keeps the files' real owners (dpkg-repack asks for it).
  if (geteuid() != 0) args.insert(args.end(), {"fakeroot", "-u"});
  args.push_back("dpkg-repack");
  args.push_back(dpkg_name(p, native));
  int st = -1;
  const std::string out = process::capture(args, &st, true);
  fs::path built;
  for (const auto& e : fs::directory_iterator(work, ec))
    if (e.path().extension() == ".deb") built = e.path();
  const fs::path file = dir / pool_file_name(p, native);
  std::string why;
  if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) || built.empty()) {
    why = "dpkg-repack failed: " + out.substr(0, out.find('\n'));
  } else if (why = verify(built, p, native); why.empty()) {
    fs::rename(built, file, ec);
    if (ec) why = "cannot move it to " + file.string() + ": " + ec.message();
  }
  fs::remove_all(work, ec);
  if (why.empty()) return file.string();
  core::log_warn("cannot repack {} from this machine: {}", p.pin, why);
  return "";
}

// Whether dpkg-repack can be run here; else one warning saying how to get it.
bool have_dpkg_repack() {
  int st = -1;
  run({"dpkg-repack", "--version"}, &st);
  if (ran(st)) return true;
  core::log_warn("dpkg-repack is not installed here: apt-get install dpkg-repack");
  return false;
}

}  // namespace pool_lookup

std::string pool_file_name(const PinnedPackage& p, std::string_view native_arch) {
  const size_t colon = p.version.find(':');
  const std::string version = colon == std::string::npos ? p.version : p.version.substr(colon + 1);
  const std::string arch = p.arch.empty() ? std::string(native_arch) : p.arch;
  return p.name + "_" + version + "_" + arch + ".deb";
}

std::vector<std::string> pool_candidates(const PinnedPackage& p, std::string_view native_arch,
                                         const std::vector<std::string>& index_urls,
                                         const std::vector<std::string>& archives) {
  const std::string file = pool_lookup::url_encode(pool_file_name(p, native_arch));
  std::vector<std::string> out;
  auto add = [&out](const std::string& url) {
    if (std::find(out.begin(), out.end(), url) == out.end()) out.push_back(url);
  };
  // The folder each other version is in, on its own archive first.
  for (const auto& url : index_urls) add(pool_lookup::folder_of(url) + file);
  for (const auto& url : index_urls) {
    const std::string folder = pool_lookup::folder_of(url);
    const std::string archive = pool_lookup::archive_of(folder, archives);
    if (archive.empty()) continue;
    for (const auto& other : archives) add(other + folder.substr(archive.size()) + file);
  }
  return out;
}

size_t fetch_pool_files(Recipe& r, const PoolOptions& options) {
  using namespace pool_lookup;
  r.pool_searched = true;  // false again below when curl cannot ask the archives
  std::vector<std::string> names;
  for (const auto& p : r.packages) names.push_back(query_name(p, r.arch));
  const auto listed = index_versions(names);
  std::vector<size_t> missing;
  std::map<std::string, std::vector<std::string>> other_versions;  // by name: name=version
  for (size_t i = 0; i < r.packages.size(); ++i) {
    auto it = listed.find(r.packages[i].name);
    if (it == listed.end() || it->second.count(r.packages[i].version)) continue;
    missing.push_back(i);
    for (const auto& v : it->second) other_versions[names[i]].push_back(names[i] + "=" + v);
  }
  if (missing.empty()) return 0;
  const auto urls = index_urls(other_versions);
  const auto known = archives();
  std::map<size_t, std::vector<std::string>> candidates;
  std::vector<std::string> all;
  for (size_t i : missing) {
    auto it = urls.find(r.packages[i].name);
    if (it == urls.end()) continue;
    candidates[i] = pool_candidates(r.packages[i], r.arch, it->second, known);
    all.insert(all.end(), candidates[i].begin(), candidates[i].end());
  }
  if (all.empty()) return 0;
  const std::set<std::string> found = existing(all, r.pool_searched);
  const fs::path dir = cache_dir(options);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::vector<std::pair<size_t, std::string>> todo;
  for (const auto& [i, list] : candidates)
    for (const auto& url : list)
      if (found.count(url)) {
        todo.emplace_back(i, url);
        break;
      }
  if (!todo.empty())
    core::log_info(
        "{} pinned version(s) apt's index no longer lists are in the archives' pools; their "
        "files are kept in {}",
        todo.size(), dir.string());
  size_t fetched = 0;
  for (size_t k = 0; k < todo.size(); ++k)
    fetched += fetch(r.packages[todo[k].first], todo[k].second, dir, r.arch,
                     fmt::format("[{}/{}]", k + 1, todo.size()));
  return fetched;
}

std::string repacked_note(const PinnedPackage& p) {
  return "repacked from this machine's installed files (dpkg-repack): no archive serves version " +
         p.version + " any more; its conffiles are this machine's";
}

size_t repack_installed(Recipe& r, const RepackOptions& options) {
  using namespace pool_lookup;
  std::vector<size_t> candidates;
  std::vector<std::string> names, dpkg_names;
  for (size_t i = 0; i < r.packages.size(); ++i) {
    if (!r.packages[i].pool_file.empty()) continue;
    candidates.push_back(i);
    names.push_back(query_name(r.packages[i], r.arch));
    dpkg_names.push_back(dpkg_name(r.packages[i], r.arch));
  }
  if (candidates.empty()) return 0;
  const auto listed = index_versions(names);
  std::vector<size_t> dropped;  // indexes into candidates
  std::vector<std::string> ask;
  for (size_t k = 0; k < candidates.size(); ++k) {
    auto l = listed.find(r.packages[candidates[k]].name);
    if (l != listed.end() && l->second.count(r.packages[candidates[k]].version)) continue;
    dropped.push_back(k);
    ask.push_back(dpkg_names[k]);
  }
  if (dropped.empty()) return 0;
  const auto installed = installed_versions(ask);
  std::vector<size_t> todo;
  for (size_t k : dropped) {
    const PinnedPackage& p = r.packages[candidates[k]];
    auto v = installed.find(dpkg_names[k]);
    if (v != installed.end() && v->second == p.version + " " + (p.arch.empty() ? r.arch : p.arch))
      todo.push_back(candidates[k]);
  }
  // Looked: a failing pin can say it is not installed here either.
  r.repack_searched = todo.empty() || have_dpkg_repack();
  if (todo.empty() || !r.repack_searched) return 0;
  const fs::path dir =
      options.cache_dir.empty() ? cache_dir({}) / "repacked" : fs::absolute(options.cache_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!options.context_dir.empty()) fs::create_directories(options.context_dir / "debs", ec);
  core::log_info(
      "{} pinned version(s) no archive serves any more are installed here; rebuilding them with "
      "dpkg-repack into {}",
      todo.size(), dir.string());
  size_t rebuilt = 0;
  for (size_t i : todo) {
    PinnedPackage& p = r.packages[i];
    const std::string file = repack(p, dir, r.arch);
    if (file.empty()) continue;
    if (!options.context_dir.empty()) {
      const fs::path copy = options.context_dir / "debs" / pool_file_name(p, r.arch);
      if (!fs::copy_file(file, copy, fs::copy_options::overwrite_existing, ec)) {
        core::log_warn("cannot copy {} to {}: {}", file, copy.string(), ec.message());
        continue;
      }
    }
    p.repacked_file = file;
    ++rebuilt;
  }
  return rebuilt;
}

}  // namespace trainscope::env
