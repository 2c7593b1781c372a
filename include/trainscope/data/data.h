// Datasets in memory and the batch loader.
//
// Readers: IDX (MNIST, Fashion-MNIST; gzipped or raw), CIFAR-10/100 binary,
// and a synthetic image dataset for tests. Images are kept as uint8
// [N, C, H, W]; batches are converted, normalised and augmented on a worker
// thread that never changes the order.
#pragma once

#include <torch/types.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trainscope/config/config.h"

namespace trainscope::data {

// A dataset in memory: images and labels of equal length N, decoded.
// Tensors are shared on copy (libtorch's reference semantics); a Dataset
// is read, never written, once loaded, so any thread may read it.
struct Dataset {
  torch::Tensor images;  // uint8 [N, C, H, W]
  torch::Tensor labels;  // int64 [N]
  int64_t classes = 0;
  std::vector<std::string> class_names;
  // N, the number of examples (0 when empty).
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // A subset by index (copies).
  Dataset select(const torch::Tensor& index) const;
};

// Default location of Debian's dataset-fashion-mnist.
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reads an IDX image file and its label file (each gzipped or raw). Throws
// Error naming the file and what is wrong with it.
Dataset read_idx(const std::filesystem::path& images, const std::filesystem::path& labels);
// Reads CIFAR-10 (1 label byte) or CIFAR-100 (coarse + fine label bytes; the
// fine label is used) binary batch files.
Dataset read_cifar(const std::vector<std::filesystem::path>& files, bool cifar100);
// A learnable synthetic dataset: each class is a random prototype image plus
// noise. Deterministic in (config, seed).
Dataset make_synthetic(const config::DataConfig& c, int64_t n, uint64_t seed);

// What load_data returns: the three splits (a split may be empty: no
// validation by default), the normalisation statistics and the files read.
struct DataSplits {
  Dataset train, val, test;
  std::vector<double> mean, std;             // per channel, on [0, 1] pixels; identity when off
  std::vector<std::filesystem::path> files;  // every file read
};

// Loads the configured dataset, splits off validation and takes subsets with
// the data_order stream.
DataSplits load_data(const config::DataConfig& c, uint64_t data_order_seed);

// Reads the dataset `c` names (its images and labels, decoded) into this
// process's memory: later load_data calls in this process, and in children
// forked from it, take it from there when each file still has the size and
// modification time it had, instead of reading and decompressing it again.
// Allocates tensors but runs no tensor operation and starts no thread, so
// it is safe before a fork (a study's warm worker). Synthetic data has no
// files. Returns the files it read.
std::vector<std::filesystem::path> warm_dataset(const config::DataConfig& c);

// One batch from an EpochLoader: its tensors are new (the batch owns
// them); a shard's x and y hold its rows only.
struct Batch {
  torch::Tensor x;            // float32/float64 [B, C, H, W], normalised (and augmented)
  torch::Tensor y;            // int64 [B]
  int64_t index = 0;          // batch index within the epoch
  int64_t batch_samples = 0;  // the whole batch's, when x and y are this shard's slice
};

// How an EpochLoader makes batches; loader_options fills it from a config.
struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = false;
  bool drop_last = false;
  int64_t crop_padding = 0;
  bool hflip = false;
  int64_t prefetch = 2;
  torch::ScalarType dtype = torch::kFloat32;
  bool channels_last = false;  // batches in NHWC memory order
  // Batches in page-locked memory, which a GPU copies from without
  // blocking the host (training on CUDA).
  bool pin_memory = false;
  std::vector<double> mean, std;
  // Data-parallel: this shard makes rows [n*shard/shards,
  // n*(shard+1)/shards) of each batch, exactly as they are in the whole
  // batch (its augmentation drawn for the whole batch), for any number of
  // shards.
  int64_t shard = 0, shards = 1;
};

// The trainer's loader options for a config and its data (prefetch from
// data.prefetch, resolved for `threads` libtorch threads).
LoaderOptions loader_options(const config::Config& cfg, const DataSplits& data, int threads);

// The batches to prepare ahead that data.prefetch stands for with
// `threads` compute threads: "auto" is 2 when a core is left over, else 0.
int64_t resolved_prefetch(const config::Config& c, int threads);

// Produces the batches of one epoch, starting at batch `start`, in a fixed
// order: the permutation of epoch e is drawn from mix_seed(order_seed, e),
// the augmentation of batch b from mix_seed(augment_seed, e, b). Batches are
// prepared `prefetch` ahead on one worker thread.
class EpochLoader {
 public:
  // Starts the worker thread at once when options.prefetch > 0. Holds `data`
  // by reference: it must outlive the loader. next() is called from one
  // thread (the training thread).
  EpochLoader(const Dataset& data, const LoaderOptions& options, int64_t epoch, uint64_t order_seed,
              uint64_t augment_seed, int64_t start = 0);
  // Stops and joins the worker; batches not taken are dropped.
  ~EpochLoader();
  EpochLoader(const EpochLoader&) = delete;
  EpochLoader& operator=(const EpochLoader&) = delete;

  // Batches in the epoch (N / batch_size, rounded up unless drop_last),
  // counting those before `start`.
  int64_t num_batches() const { return num_batches_; }
  // The next batch, or nullopt at the end of the epoch.
  std::optional<Batch> next();
  // The sample order of this epoch (for tests).
  const torch::Tensor& order() const { return order_; }

 private:
  Batch make_batch(int64_t b) const;
  void work();

  const Dataset& data_;
  LoaderOptions options_;
  int64_t epoch_;
  uint64_t augment_seed_;
  torch::Tensor order_;
  int64_t num_batches_;
  int64_t next_make_, next_take_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread worker_;
};

// The tensor type of a config's model and data (float32 or float64).
torch::ScalarType dtype_of(const config::Config& c);
// Whether a config lays 4-D tensors out channels-last (compute.memory_format).
bool channels_last(const config::Config& c);

// Converts and normalises images (no augmentation); for evaluation.
// With `channels_last` the result lies in NHWC memory order.
torch::Tensor to_input(const torch::Tensor& images_u8, const std::vector<double>& mean,
                       const std::vector<double>& std, torch::ScalarType dtype,
                       bool channels_last = false);

}  // namespace trainscope::data
