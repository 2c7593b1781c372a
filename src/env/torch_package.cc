// The torch package folder as files: version.py, the dist-info beside it,
// a conda environment's conda-meta (env/torch_package.h).
#include "trainscope/env/torch_package.h"

#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <system_error>

#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"

namespace fs = std::filesystem;

namespace trainscope::env {

namespace {

constexpr const char* kPrefix = "libraries.torch.";

std::string read_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return "";
  try {  // what replaced it since (a FIFO) is refused, not waited on
    return core::read_regular_file(p, "file").value_or("");
  } catch (const core::Error&) {
    return "";
  }
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// version.py's `name = '...'` (or "..."), "" when absent or None.
std::string python_string(const std::string& text, const std::string& name) {
  std::smatch m;
  const std::regex re("(^|\\n)" + name +
                      "\\s*(:\\s*[A-Za-z_.\\[\\]| ]+)?=\\s*['\"]([^'\"\\n]*)['\"]");
  return std::regex_search(text, m, re) ? m[3].str() : "";
}

// The torch-*.dist-info folder beside the package ("" when none): the one of
// `version` (version.py's, without a local label) when several are left
// there by earlier installs.
fs::path dist_info(const fs::path& torch_dir, const std::string& version) {
  const std::string exact = "torch-" + version.substr(0, version.find('+')) + ".dist-info";
  std::error_code ec;
  if (fs::is_directory(torch_dir.parent_path() / exact, ec)) return torch_dir.parent_path() / exact;
  for (fs::directory_iterator it(torch_dir.parent_path(), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.rfind("torch-", 0) == 0 && n.size() > 16 && n.ends_with(".dist-info")) return it->path();
  }
  return {};
}

// A conda environment's record of its pytorch package: the environment is
// site-packages/../../.. (lib/pythonX.Y/site-packages).
fs::path conda_record(const fs::path& torch_dir) {
  const fs::path meta =
      torch_dir.parent_path().parent_path().parent_path().parent_path() / "conda-meta";
  std::error_code ec;
  for (fs::directory_iterator it(meta, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    // pytorch-<version>-<build>.json; not pytorch-mutex-1.0, pytorch-cuda-,
    // pytorch-lightning-
    if (n.size() > 9 && n.rfind("pytorch-", 0) == 0 &&
        std::isdigit(static_cast<unsigned char>(n[8])) && n.ends_with(".json"))
      return it->path();
  }
  return {};
}

std::string json_string(const std::string& json, const std::string& key) {
  std::smatch m;
  const std::regex re("\"" + key + "\"\\s*:\\s*\"([^\"]*)\"");
  return std::regex_search(json, m, re) ? m[1].str() : "";
}

// Requires-Dist lines pinned with == (nvidia-cudnn-cu13==9.26.0.51; ...).
void add_requirements(const std::string& metadata, Manifest& m) {
  static const std::regex kPin(
      R"((^|\n)Requires-Dist: ([A-Za-z0-9._-]+)(\[[^\]]*\])? ?\(?==([^ ;,)\r\n]+))");
  for (std::sregex_iterator it(metadata.begin(), metadata.end(), kPin), end; it != end; ++it) {
    const std::string name = (*it)[2].str(), version = (*it)[4].str();
    m[std::string(kPrefix) + "requires." + name] = version;
    if (name.rfind("nvidia-cudnn", 0) == 0) m[std::string(kPrefix) + "cudnn"] = version;
  }
}

// installer and index of a pip/uv/conda install, from the dist-info.
void add_origin(const fs::path& info, const std::string& version, Manifest& m) {
  const std::string p = kPrefix;
  std::string installer = trim(read_file(info / "INSTALLER"));
  const std::string direct = read_file(info / "direct_url.json");
  if (!direct.empty()) {
    const std::string url = json_string(direct, "url");
    const bool local = url.rfind("file:", 0) == 0;
    if (local && direct.find("\"dir_info\"") != std::string::npos) {
      m[p + "installer"] = "source";  // pip install -e / a local source folder
      return;
    }
    m[p + "installer"] = installer.empty() ? "pip" : installer;
    m[p + "url"] = url;  // a wheel from a URL or a file: no index serves it
    return;
  }
  m[p + "installer"] = installer.empty() ? "pip" : installer;
  const auto plus = version.find('+');
  if (plus == std::string::npos) {
    m[p + "index"] = "https://pypi.org/simple";
  } else {  // PyTorch's own index serves the variants PyPI does not (+cpu, +cu128, +rocm6.4)
    m[p + "index"] = "https://download.pytorch.org/whl/" + version.substr(plus + 1);
  }
}

}  // namespace

Manifest describe_torch_package(const fs::path& torch_dir) {
  Manifest m;
  const std::string p = kPrefix;
  m[p + "path"] = torch_dir.string();
  const std::string version_py = read_file(torch_dir / "version.py");
  if (const std::string v = python_string(version_py, "__version__"); !v.empty())
    m[p + "version"] = v;
  if (const std::string g = python_string(version_py, "git_version"); !g.empty()) m[p + "git"] = g;
  const std::string cuda = python_string(version_py, "cuda");
  m[p + "cuda"] = cuda.empty() ? "none" : cuda;
  if (const fs::path conda = conda_record(torch_dir); !conda.empty()) {
    const std::string json = read_file(conda);
    m[p + "installer"] = "conda";
    m[p + "distribution"] = "pytorch==" + json_string(json, "version");
    if (const std::string channel = json_string(json, "channel"); !channel.empty())
      m[p + "index"] = channel;
    return m;
  }
  const fs::path info = dist_info(torch_dir, python_string(version_py, "__version__"));
  if (info.empty()) {
    m[p + "installer"] = "source";  // a build tree on PYTHONPATH, setup.py develop
    return m;
  }
  const std::string metadata = read_file(info / "METADATA");
  std::smatch v;
  if (!std::regex_search(metadata, v, std::regex(R"((^|\n)Version: ([^\r\n]+))"))) return m;
  const std::string version = trim(v[2].str());
  m[p + "distribution"] = "torch==" + version;
  add_origin(info, version, m);
  add_requirements(metadata, m);
  return m;
}

}  // namespace trainscope::env
