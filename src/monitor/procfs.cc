#include "trainscope/monitor/procfs.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace trainscope::monitor {
namespace {

const double kTick = static_cast<double>(sysconf(_SC_CLK_TCK));
const int64_t kPage = sysconf(_SC_PAGESIZE);

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int64_t field_kb(const std::string& text, const std::string& key) {
  auto pos = text.find(key);
  if (pos == std::string::npos) return 0;
  return std::stoll(text.substr(pos + key.size())) * 1024;
}

// Fields after the command name of /proc/PID/stat (field 3 onwards).
std::vector<std::string> stat_fields(const std::string& line) {
  std::vector<std::string> out;
  auto close = line.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream in(line.substr(close + 2));
  std::string f;
  while (in >> f) out.push_back(f);
  return out;
}

}  // namespace

ProcessStat read_process(int64_t pid, const fs::path& proc) {
  ProcessStat s;
  s.pid = pid;
  fs::path dir = proc / std::to_string(pid);
  auto f = stat_fields(slurp(dir / "stat"));
  if (f.size() < 22) return s;
  // Field numbers (1-based) per proc(5): 4 ppid, 14 utime, 15 stime,
  // 20 num_threads, 24 rss; f[0] is field 3.
  s.alive = f[0] != "Z" && f[0] != "X";
  s.ppid = std::stoll(f[1]);
  s.utime_s = static_cast<double>(std::stoll(f[11])) / kTick;
  s.stime_s = static_cast<double>(std::stoll(f[12])) / kTick;
  s.threads = std::stoll(f[17]);
  s.rss_bytes = std::stoll(f[21]) * kPage;
  std::string status = slurp(dir / "status");
  s.peak_rss_bytes = field_kb(status, "VmHWM:");
  std::string io = slurp(dir / "io");
  auto grab = [&](const std::string& key) -> int64_t {
    auto pos = io.find(key);
    return pos == std::string::npos ? 0 : std::stoll(io.substr(pos + key.size()));
  };
  s.read_bytes = grab("\nread_bytes:");
  s.write_bytes = grab("\nwrite_bytes:");
  if (s.read_bytes == 0 && io.rfind("read_bytes:", 0) == 0) s.read_bytes = grab("read_bytes:");
  return s;
}

std::vector<int64_t> process_tree(int64_t root, const fs::path& proc) {
  std::multimap<int64_t, int64_t> children;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto f = stat_fields(slurp(entry.path() / "stat"));
    if (f.size() > 1) children.emplace(std::stoll(f[1]), std::stoll(name));
  }
  std::vector<int64_t> out = {root};
  for (size_t i = 0; i < out.size(); ++i) {
    auto [b, e] = children.equal_range(out[i]);
    for (auto it = b; it != e; ++it) out.push_back(it->second);
  }
  return out;
}

ProcessStat read_tree(int64_t root, const fs::path& proc) {
  ProcessStat total;
  total.pid = root;
  for (int64_t pid : process_tree(root, proc)) {
    ProcessStat s = read_process(pid, proc);
    if (pid == root) total.alive = s.alive, total.ppid = s.ppid;
    total.utime_s += s.utime_s;
    total.stime_s += s.stime_s;
    total.threads += s.threads;
    total.rss_bytes += s.rss_bytes;
    // Each process's VmHWM is its own peak, reached at its own moment: their
    // sum is not the tree's peak. The largest of them is a floor of it; the
    // sampler raises it to the largest tree RSS it samples.
    total.peak_rss_bytes = std::max(total.peak_rss_bytes, s.peak_rss_bytes);
    total.read_bytes += s.read_bytes;
    total.write_bytes += s.write_bytes;
  }
  return total;
}

SystemStat read_system(const fs::path& proc) {
  SystemStat s;
  std::istringstream stat(slurp(proc / "stat"));
  std::string line;
  while (std::getline(stat, line)) {
    if (line.rfind("cpu", 0) != 0) break;
    std::istringstream in(line);
    std::string name;
    in >> name;
    double v, total = 0, idle = 0;
    for (int i = 0; in >> v; ++i) {
      if (i >= 8) break;  // guest time is already in user
      total += v;
      if (i == 3 || i == 4) idle += v;  // idle, iowait
    }
    CpuTimes t{total - idle, total};
    if (name == "cpu") {
      s.all = t;
    } else {
      s.cores.push_back(t);
    }
  }
  std::string mem = slurp(proc / "meminfo");
  s.mem_total_bytes = field_kb(mem, "MemTotal:");
  s.mem_available_bytes = field_kb(mem, "MemAvailable:");
  std::istringstream net(slurp(proc / "net/dev"));
  while (std::getline(net, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string iface = line.substr(0, colon);
    iface.erase(0, iface.find_first_not_of(' '));
    if (iface == "lo") continue;
    std::istringstream in(line.substr(colon + 1));
    int64_t v[16] = {0};
    for (int i = 0; i < 16 && (in >> v[i]); ++i) {
    }
    s.net_rx_bytes += v[0];
    s.net_tx_bytes += v[8];
  }
  return s;
}

}  // namespace trainscope::monitor
