// Where the torch a process loaded came from: its package folder
// (site-packages/torch) read as files, without libtorch, so that a manifest
// says which wheel or conda package ran and `env recreate` can install the
// same again. The env component's libtorch half (capture_torch) finds the
// folder from the libtorch it mapped and merges this in.
#pragma once

#include <filesystem>
#include <string>

#include "trainscope/env/manifest.h"

namespace trainscope::env {

// libraries.torch.* from the package folder `torch_dir`:
//   path          the folder
//   version       torch/version.py's __version__ (2.15.0+cu132), git its
//                 git_version, cuda the CUDA it was built with ("none")
//   distribution  what pip installs it by, "torch==<METADATA Version>"
//                 (the dist-info beside the folder; absent without one)
//   installer     pip, uv, conda (INSTALLER, or a conda-meta/pytorch-*.json
//                 of the environment), or source (no distribution metadata,
//                 an editable or local-folder install)
//   index         where that version is served: PyPI's simple index for a
//                 plain version; download.pytorch.org/whl/<label> for a
//                 local label (+cpu, +cu128); a conda package's channel.
//                 Absent for a source build and for url's installs.
//   url           the wheel's own URL (https:, file:) when pip installed it
//                 from one (direct_url.json)
//   requires.<name>  the exact pins of its METADATA (nvidia-cudnn-cu13 ->
//                 9.26.0.51), and cudnn the cuDNN one of them names
// Values are as read, checked by no one: a reader that writes them into
// code (env recreate) validates them itself. Unreadable files leave their
// keys out; never throws.
Manifest describe_torch_package(const std::filesystem::path& torch_dir);

}  // namespace trainscope::env
