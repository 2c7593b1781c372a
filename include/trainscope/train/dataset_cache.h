// Decoded datasets kept on disk, so that a training does not gunzip and
// parse the same files again: a one-step training of the demo takes 0.66 s
// with Fashion-MNIST's entry against 0.87 s decoding it (docs/benchmarks.md).
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "trainscope/train/data.h"

namespace trainscope::train {

// The dataset of `files` as `decode` makes it, from the cache when an entry
// for these files holds it: the entry records each file's device, inode,
// size, modification and change times when it was written, and an Adler-32
// of its pixels and labels, and is used only while all of them match. A
// missing, stale, truncated or damaged entry is decoded again and
// replaced; a cache that cannot be written is skipped, and files modified
// in the last 2 s are always decoded (their times may not change yet). Entries live in
// core::user_cache_dir()/datasets, one per set of files;
// TRAINSCOPE_DATASET_CACHE=off turns the cache off.
Dataset cached_dataset(const std::vector<std::filesystem::path>& files,
                       const std::function<Dataset()>& decode);

// The cache entry for `files` (empty when there is no cache folder or the
// cache is off).
std::filesystem::path dataset_cache_entry(const std::vector<std::filesystem::path>& files);

}  // namespace trainscope::train
