// Decoded datasets kept on disk, so that a training does not gunzip and
// parse the same files again: a one-step training of the demo takes 0.66 s
// with Fashion-MNIST's entry against 0.87 s decoding it (docs/benchmarks.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "trainscope/data/data.h"

namespace trainscope::data {

// What a dataset's files say of it without being decoded (IDX headers,
// CIFAR's fixed shape and classes): an entry that disagrees is not used.
// -1: not known from the files (`classes` -1: one more than the largest
// label, as IDX datasets count them).
struct DatasetShape {
  int64_t n = -1, channels = -1, height = -1, width = -1, classes = -1;
};

// The dataset of `files` as `decode` makes it, from the cache when an entry
// for these files holds it: the entry records each file's device, inode,
// size, modification and change times when it was written, the byte order
// it was written in, and an Adler-32 of its header, pixels and labels, and
// is used only while all of them match and its header agrees with
// `expected` (its labels within its classes). A missing, stale, truncated,
// damaged or disagreeing entry is decoded again and replaced; a cache that
// cannot be written is skipped, and files modified in the last 2 s are
// always decoded (their times may not change yet). An entry's path that is
// not a regular file (a FIFO) is neither read nor written, with a warning.
// Entries live in core::user_cache_dir()/datasets, one per set of files;
// TRAINSCOPE_DATASET_CACHE=off turns the cache off.
Dataset cached_dataset(const std::vector<std::filesystem::path>& files,
                       const std::function<Dataset()>& decode, const DatasetShape& expected = {});

// The cache entry for `files` (empty when there is no cache folder or the
// cache is off).
std::filesystem::path dataset_cache_entry(const std::vector<std::filesystem::path>& files);

}  // namespace trainscope::data
