// env::describe_torch_package: where the torch a process loaded came from,
// read from its package folder. Folders laid out as pip, uv, conda and a
// source build leave them, built by the test; and the real .venv's torch
// when the build has one (TS_TORCH_DIR), against what its files say.
#include "trainscope/env/torch_package.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/test_util.h"

namespace trainscope::env {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// site-packages/torch with version.py, and (unless `metadata` is empty)
// torch-<v>.dist-info beside it.
fs::path package(const fs::path& site, const std::string& version, const std::string& metadata,
                 const std::string& installer = "pip") {
  write(site / "torch/version.py",
        "from typing import Optional\n__all__ = ['__version__']\n__version__ = '" + version +
            "'\ndebug = False\ncuda: Optional[str] = '13.2'\ngit_version = 'd0f2af8b66b2'\n");
  if (!metadata.empty()) {
    const fs::path info = site / ("torch-" + version.substr(0, version.find('+')) + ".dist-info");
    write(info / "METADATA", metadata);
    write(info / "INSTALLER", installer + "\n");
  }
  return site / "torch";
}

const char* kMetadata =
    "Metadata-Version: 2.4\nName: torch\nVersion: 2.15.0\n"
    "Requires-Dist: filelock\n"
    "Requires-Dist: cuda-toolkit[cublas,cudart]==13.2.2; platform_system == \"Linux\"\n"
    "Requires-Dist: nvidia-cudnn-cu13==9.26.0.51; platform_system == \"Linux\"\n"
    "Requires-Dist: triton~=3.9.0; platform_system == \"Linux\"\n";

TEST(TorchPackageTest, APypiWheelIsItsVersionFromPypi) {
  TempDir dir;
  const auto torch = package(dir / "lib/python3.11/site-packages", "2.15.0+cu132", kMetadata);
  const Manifest m = describe_torch_package(torch);
  EXPECT_EQ(m.at("libraries.torch.path"), torch.string());
  EXPECT_EQ(m.at("libraries.torch.version"), "2.15.0+cu132");
  EXPECT_EQ(m.at("libraries.torch.git"), "d0f2af8b66b2");
  EXPECT_EQ(m.at("libraries.torch.cuda"), "13.2");
  EXPECT_EQ(m.at("libraries.torch.distribution"), "torch==2.15.0");
  EXPECT_EQ(m.at("libraries.torch.installer"), "pip");
  EXPECT_EQ(m.at("libraries.torch.index"), "https://pypi.org/simple");
  EXPECT_EQ(m.at("libraries.torch.cudnn"), "9.26.0.51");
  EXPECT_EQ(m.at("libraries.torch.requires.cuda-toolkit"), "13.2.2");
  EXPECT_EQ(m.count("libraries.torch.requires.triton"), 0u);  // ~= is no pin
}

TEST(TorchPackageTest, ALocalLabelComesFromPytorchsOwnIndexAndUvIsNamed) {
  TempDir dir;
  std::string meta = kMetadata;
  meta.replace(meta.find("Version: 2.15.0"), 15, "Version: 2.15.0+cpu");
  const auto torch = package(dir / "site", "2.15.0+cpu", meta, "uv");
  const Manifest m = describe_torch_package(torch);
  EXPECT_EQ(m.at("libraries.torch.distribution"), "torch==2.15.0+cpu");
  EXPECT_EQ(m.at("libraries.torch.installer"), "uv");
  EXPECT_EQ(m.at("libraries.torch.index"), "https://download.pytorch.org/whl/cpu");
}

TEST(TorchPackageTest, AnEditableOrLocalFolderInstallIsASourceBuild) {
  TempDir dir;
  const auto torch = package(dir / "site", "2.16.0a0+git1234567", kMetadata);
  write(dir / "site/torch-2.16.0a0.dist-info/direct_url.json",
        R"({"dir_info": {"editable": true}, "url": "file:///home/me/pytorch"})");
  const Manifest m = describe_torch_package(torch);
  EXPECT_EQ(m.at("libraries.torch.installer"), "source");
  EXPECT_EQ(m.count("libraries.torch.index"), 0u);
  // A wheel installed from a URL: that URL is where it comes from.
  TempDir dir2;
  const auto torch2 = package(dir2 / "site", "2.15.0", kMetadata);
  write(dir2 / "site/torch-2.15.0.dist-info/direct_url.json",
        R"({"archive_info": {}, "url": "https://example.org/torch-2.15.0-cp311.whl"})");
  const Manifest url = describe_torch_package(torch2);
  EXPECT_EQ(url.at("libraries.torch.url"), "https://example.org/torch-2.15.0-cp311.whl");
  EXPECT_EQ(url.count("libraries.torch.index"), 0u);
}

TEST(TorchPackageTest, CondaAndABuildTreeAreNamed) {
  TempDir dir;
  const auto torch = package(dir / "env/lib/python3.11/site-packages", "2.15.0", kMetadata);
  // Every pytorch-channel environment also holds pytorch-mutex: not torch.
  write(dir / "env/conda-meta/pytorch-mutex-1.0-cuda.json",
        R"({"name": "pytorch-mutex", "version": "1.0"})");
  write(
      dir / "env/conda-meta/pytorch-2.15.0-py3.11_cuda13.0_0.json",
      R"({"name": "pytorch", "version": "2.15.0", "channel": "https://conda.anaconda.org/pytorch/linux-64"})");
  const Manifest m = describe_torch_package(torch);
  EXPECT_EQ(m.at("libraries.torch.installer"), "conda");
  EXPECT_EQ(m.at("libraries.torch.distribution"), "pytorch==2.15.0");
  EXPECT_EQ(m.at("libraries.torch.index"), "https://conda.anaconda.org/pytorch/linux-64");
  TempDir tree;
  const Manifest src = describe_torch_package(package(tree / "pytorch", "2.16.0a0+gitabc", ""));
  EXPECT_EQ(src.at("libraries.torch.installer"), "source");
  EXPECT_EQ(src.at("libraries.torch.version"), "2.16.0a0+gitabc");
  EXPECT_EQ(src.count("libraries.torch.distribution"), 0u);
  // Nothing there: the path only, never an exception.
  const Manifest none = describe_torch_package(tree / "missing");
  EXPECT_EQ(none.at("libraries.torch.path"), (tree / "missing").string());
  EXPECT_EQ(none.count("libraries.torch.version"), 0u);
}

#ifdef TS_TORCH_DIR
// The torch this build links: what its files say, read back.
TEST(TorchPackageTest, TheBuildsOwnTorchIsDescribedAsItsFilesSay) {
  const Manifest m = describe_torch_package(TS_TORCH_DIR);
  EXPECT_EQ(m.at("libraries.torch.version"), TS_TORCH_VERSION);
  EXPECT_EQ(m.at("libraries.torch.distribution").rfind("torch==", 0), 0u);
  EXPECT_FALSE(m.at("libraries.torch.installer").empty());
}
#endif

}  // namespace
}  // namespace trainscope::env
