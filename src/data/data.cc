#include "trainscope/data/data.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "trainscope/config/seeds.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/data/dataset_cache.h"
#include "trainscope/data/dataset_files.h"
#include "trainscope/env/cpus.h"

namespace fs = std::filesystem;

namespace trainscope::data {
using core::ErrorKind;
using core::fail;

namespace {

constexpr const char* kFashionHint =
    "Fashion-MNIST comes from the Debian package dataset-fashion-mnist "
    "(apt-get install dataset-fashion-mnist)";

// A gzip or plain file for reading (zlib reads plain files as they are). A
// FIFO or a device is refused, never waited on or read without end.
gzFile open_maybe_gz(const fs::path& path, const char* what) {
  const int fd = core::open_regular_file(path, fmt::format("{} file", what));
  gzFile f = fd < 0 ? nullptr : gzdopen(fd, "rb");
  if (!f) {
    const int err = errno;
    if (fd >= 0) close(fd);
    fail(ErrorKind::kNotFound, "cannot open {} file '{}': {}; {}", what, path.string(),
         std::strerror(err), kFashionHint);
  }
  return f;
}

// Whole file, transparently gunzipped.
std::string read_maybe_gz(const fs::path& path, const char* what) {
  gzFile f = open_maybe_gz(path, what);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string emsg = msg ? msg : "";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
    fail(ErrorKind::kUsage, "{} file '{}' is corrupt (gzip: {}); re-download or reinstall it", what,
         path.string(), emsg);
  return out;
}

// The first `size` bytes of a file, gunzipped (fewer when it is shorter).
std::string head_maybe_gz(const fs::path& path, const char* what, unsigned size) {
  gzFile f = open_maybe_gz(path, what);
  std::string out(size, '\0');
  const int n = gzread(f, out.data(), size);
  gzclose(f);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

uint32_t big_endian32(std::string_view s, size_t off) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data()) + off;
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// Datasets warm_dataset read, by their files, with each file's size and
// modification time then.
struct WarmDataset {
  std::vector<std::pair<uintmax_t, fs::file_time_type>> stamps;
  Dataset data;
};
std::map<std::vector<fs::path>, WarmDataset>& warm_datasets() {
  static std::map<std::vector<fs::path>, WarmDataset> sets;
  return sets;
}

std::vector<std::pair<uintmax_t, fs::file_time_type>> stamps_of(
    const std::vector<fs::path>& files) {
  std::vector<std::pair<uintmax_t, fs::file_time_type>> out;
  for (const auto& f : files) {
    std::error_code ec;
    out.emplace_back(fs::file_size(f, ec), fs::last_write_time(f, ec));
  }
  return out;
}

// The dataset of `files` from warm_dataset's copy when every file still has
// the size and time it had then (its tensors are shared, never written:
// load_data selects copies); read by `read` otherwise.
template <typename Read>
Dataset warm_or_read(const std::vector<fs::path>& files, Read&& read) {
  auto it = warm_datasets().find(files);
  if (it != warm_datasets().end() && it->second.stamps == stamps_of(files)) return it->second.data;
  return read();
}

// Finds NAME or NAME.gz in dir.
fs::path find_file(const fs::path& dir, const std::string& name) {
  for (const auto& candidate : {dir / name, dir / (name + ".gz")})
    if (fs::exists(candidate)) return candidate;
  fail(ErrorKind::kNotFound, "dataset file '{}' (or .gz) not found in '{}'; {}", name, dir.string(),
       kFashionHint);
}

// MNIST and Fashion-MNIST have classes 0..9: a label outside that range is
// a damaged or foreign file, not an 11th class.
void check_labels(const Dataset& d, const fs::path& labels_path, const std::string& dataset) {
  if (d.size() == 0) return;
  int64_t max = d.labels.max().item<int64_t>();
  if (max < 10) return;
  int64_t at = (d.labels >= 10).nonzero()[0][0].item<int64_t>();
  fail(ErrorKind::kUsage, "'{}' holds label {} at index {}; {} labels are 0..9 (a damaged file?)",
       labels_path.string(), d.labels[at].item<int64_t>(), at, dataset);
}

const std::vector<std::string> kFashionClasses = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                  "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                  "Bag",         "Ankle boot"};

}  // namespace

Dataset Dataset::select(const torch::Tensor& index) const {
  Dataset d;
  d.images = images.index_select(0, index).contiguous();
  d.labels = labels.index_select(0, index).contiguous();
  d.classes = classes;
  d.class_names = class_names;
  return d;
}

namespace {

// Tensors over unpacked images: uint8 [n, c, h, w] and int64 labels.
Dataset to_dataset(const RawImages& r) {
  Dataset d;
  d.images = torch::empty({r.n, r.channels, r.height, r.width}, torch::kUInt8);
  std::memcpy(d.images.data_ptr(), r.pixels.data(), r.pixels.size());
  d.labels = torch::empty({r.n}, torch::kInt64);
  auto* lab = d.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < r.n; ++i) lab[i] = r.labels[static_cast<size_t>(i)];
  return d;
}

}  // namespace

Dataset read_idx(const fs::path& images_path, const fs::path& labels_path) {
  const RawImages r =
      parse_idx(read_maybe_gz(images_path, "IDX image"), read_maybe_gz(labels_path, "IDX label"),
                images_path.string(), labels_path.string());
  Dataset d = to_dataset(r);
  // No tensor operation (a reduction may start libgomp's threads): this
  // also runs in a study's warm worker before it forks.
  d.classes = r.n > 0 ? *std::max_element(r.labels.begin(), r.labels.end()) + 1 : 0;
  return d;
}

Dataset read_cifar(const std::vector<fs::path>& files, bool cifar100) {
  RawImages r;
  for (const auto& f : files)
    parse_cifar(read_maybe_gz(f, cifar100 ? "CIFAR-100 binary" : "CIFAR-10 binary"), cifar100,
                f.string(), r);
  Dataset d = to_dataset(r);
  d.classes = cifar100 ? 100 : 10;
  return d;
}

Dataset make_synthetic(const config::DataConfig& c, int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  const int64_t k = c.synthetic.classes;
  auto shape = std::vector<int64_t>{c.synthetic.channels, c.synthetic.height, c.synthetic.width};
  // Prototypes are fixed by the dataset's own seed, not the caller's, so
  // train and test share them.
  auto proto_gen = at::detail::createCPUGenerator(0x5eed);
  auto protos = torch::empty({k, shape[0], shape[1], shape[2]}).uniform_(0, 1, proto_gen);
  Dataset d;
  d.labels = torch::randint(0, k, {n}, gen, torch::kInt64);
  auto noise = torch::empty({n, shape[0], shape[1], shape[2]}).normal_(0, 0.25, gen);
  auto x = protos.index_select(0, d.labels) * 0.7 + noise;
  d.images = (x.clamp(0, 1) * 255).round().to(torch::kUInt8);
  d.classes = k;
  return d;
}

namespace {

// Mean and sample standard deviation (ddof 1) of each channel of uint8
// images [N, C, H, W], on [0, 1] pixels, computed exactly: a histogram of
// byte values per channel, then integer sums. No copy of the images is made
// (a float64 copy of Fashion-MNIST's training set is 376 MB).
void channel_statistics(const torch::Tensor& images, std::vector<double>& mean,
                        std::vector<double>& sd) {
  const torch::Tensor x = images.contiguous();
  const int64_t n = x.size(0), ch = x.size(1), plane = x.size(2) * x.size(3);
  const uint8_t* p = x.data_ptr<uint8_t>();
  for (int64_t c = 0; c < ch; ++c) {
    std::array<int64_t, 256> hist{};
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* q = p + (i * ch + c) * plane;
      for (int64_t j = 0; j < plane; ++j) ++hist[q[j]];
    }
    __int128 sum = 0, sum2 = 0;
    for (int v = 0; v < 256; ++v)
      sum += static_cast<__int128>(hist[v]) * v, sum2 += static_cast<__int128>(hist[v]) * v * v;
    const auto count = static_cast<__int128>(n) * plane;
    if (count < 2) {
      mean.push_back(count ? static_cast<double>(sum) / 255.0 : 0.0);
      sd.push_back(1.0);
      continue;
    }
    // var * 255^2 * count * (count - 1) = count * sum2 - sum^2, exactly.
    const long double var =
        static_cast<long double>(count * sum2 - sum * sum) /
        (static_cast<long double>(count) * static_cast<long double>(count - 1)) / (255.0L * 255.0L);
    mean.push_back(static_cast<double>(static_cast<long double>(sum) /
                                       static_cast<long double>(count) / 255.0L));
    sd.push_back(std::max(static_cast<double>(std::sqrt(var)), 1e-6));
  }
}

}  // namespace

namespace {

// The files of a dataset on disk (none for synthetic data).
struct DatasetFiles {
  std::vector<fs::path> train, test;  // IDX: images then labels
  bool idx = false, cifar100 = false;
};

DatasetFiles dataset_files(const config::DataConfig& c) {
  DatasetFiles f;
  if (c.dataset == "fashion-mnist" || c.dataset == "mnist") {
    fs::path dir = c.path.empty() ? fs::path(kFashionMnistDir) : fs::path(c.path);
    if (c.path.empty() && c.dataset == "mnist")
      fail(ErrorKind::kUsage, "data.path must name the folder with the MNIST IDX files");
    f.idx = true;
    f.train = {find_file(dir, "train-images-idx3-ubyte"),
               find_file(dir, "train-labels-idx1-ubyte")};
    f.test = {find_file(dir, "t10k-images-idx3-ubyte"), find_file(dir, "t10k-labels-idx1-ubyte")};
  } else if (c.dataset == "cifar10" || c.dataset == "cifar100") {
    if (c.path.empty())
      fail(ErrorKind::kUsage,
           "data.path must name the folder with the CIFAR binary files (cifar-10-batches-bin or "
           "cifar-100-binary); no Debian package ships them");
    fs::path dir(c.path);
    f.cifar100 = c.dataset == "cifar100";
    if (!f.cifar100) {
      for (int i = 1; i <= 5; ++i)
        f.train.push_back(find_file(dir, "data_batch_" + std::to_string(i) + ".bin"));
      f.test.push_back(find_file(dir, "test_batch.bin"));
    } else {
      f.train.push_back(find_file(dir, "train.bin"));
      f.test.push_back(find_file(dir, "test.bin"));
    }
  }
  return f;
}

// What a split's files say of their dataset before it is decoded (IDX
// headers; CIFAR's shape, classes and, for plain files, count), checked
// against a cache entry (dataset_cache.h); std::nullopt when the IDX
// headers are not what decoding accepts (decoding then says why).
std::optional<DatasetShape> files_shape(const DatasetFiles& f, const std::vector<fs::path>& files) {
  DatasetShape s;
  if (!f.idx) {
    s.channels = 3, s.height = s.width = 32, s.classes = f.cifar100 ? 100 : 10;
    const uintmax_t record = f.cifar100 ? 3074 : 3073;
    s.n = 0;
    for (const auto& p : files) {
      std::error_code ec;
      const uintmax_t size = fs::file_size(p, ec);
      if (ec || p.extension() == ".gz") {
        s.n = -1;  // not known without gunzipping
        break;
      }
      s.n += static_cast<int64_t>(size / record);
    }
    return s;
  }
  const std::string img = head_maybe_gz(files[0], "IDX image", 16);
  const std::string lab = head_maybe_gz(files[1], "IDX label", 8);
  if (img.size() < 16 || lab.size() < 8 || big_endian32(img, 0) != 0x803 ||
      big_endian32(lab, 0) != 0x801 || big_endian32(img, 4) != big_endian32(lab, 4))
    return std::nullopt;
  s.n = big_endian32(img, 4), s.channels = 1;
  s.height = big_endian32(img, 8), s.width = big_endian32(img, 12);
  return s;
}

// One split's files decoded, through the decoded-dataset cache.
Dataset decode(const DatasetFiles& f, const std::vector<fs::path>& files) {
  const auto read = [&] {
    return f.idx ? read_idx(files[0], files[1]) : read_cifar(files, f.cifar100);
  };
  const std::optional<DatasetShape> shape = files_shape(f, files);
  return shape ? cached_dataset(files, read, *shape) : read();
}

}  // namespace

std::vector<fs::path> warm_dataset(const config::DataConfig& c) {
  const DatasetFiles f = dataset_files(c);
  std::vector<fs::path> read;
  for (const auto* files : {&f.train, &f.test}) {
    if (files->empty()) continue;
    WarmDataset w{stamps_of(*files), decode(f, *files)};
    warm_datasets()[*files] = std::move(w);
    read.insert(read.end(), files->begin(), files->end());
  }
  return read;
}

DataSplits load_data(const config::DataConfig& c, uint64_t data_order_seed) {
  DataSplits s;
  Dataset train, test;
  const DatasetFiles f = dataset_files(c);
  if (f.idx) {
    train = warm_or_read(f.train, [&] { return decode(f, f.train); });
    test = warm_or_read(f.test, [&] { return decode(f, f.test); });
    check_labels(train, f.train[1], c.dataset);
    check_labels(test, f.test[1], c.dataset);
    s.files = {f.train[0], f.train[1], f.test[0], f.test[1]};
    if (c.dataset == "fashion-mnist") train.class_names = test.class_names = kFashionClasses;
  } else if (!f.train.empty()) {
    train = warm_or_read(f.train, [&] { return decode(f, f.train); });
    test = warm_or_read(f.test, [&] { return decode(f, f.test); });
    s.files = f.train;
    s.files.insert(s.files.end(), f.test.begin(), f.test.end());
  } else {
    train = make_synthetic(c, c.synthetic.size, 1);
    test = make_synthetic(c, std::max<int64_t>(c.synthetic.size / 4, 64), 2);
  }
  test.classes = train.classes = std::max(train.classes, test.classes);

  // One permutation of the training set, from the data_order stream, decides
  // both the validation split and the subset.
  auto gen = at::detail::createCPUGenerator(config::mix_seed(data_order_seed, 0x5b117));
  auto perm = torch::randperm(train.size(), gen, torch::kInt64);
  int64_t n_val = static_cast<int64_t>(static_cast<double>(train.size()) * c.val_fraction);
  if (n_val > 0) s.val = train.select(std::get<0>(perm.narrow(0, 0, n_val).sort()));
  auto rest = perm.narrow(0, n_val, train.size() - n_val);
  if (c.train_subset > 0 && c.train_subset < rest.size(0)) rest = rest.narrow(0, 0, c.train_subset);
  s.train = train.select(std::get<0>(rest.sort()));
  if (c.test_subset > 0 && c.test_subset < test.size())
    test = test.select(torch::arange(c.test_subset));
  s.test = std::move(test);
  if (s.train.size() == 0) fail(ErrorKind::kUsage, "the training set is empty after the split");

  int64_t channels = s.train.images.size(1);
  if (c.normalize) {
    channel_statistics(s.train.images, s.mean, s.std);
  } else {
    s.mean.assign(static_cast<size_t>(channels), 0.0);
    s.std.assign(static_cast<size_t>(channels), 1.0);
  }
  return s;
}

LoaderOptions loader_options(const config::Config& cfg, const DataSplits& data, int threads) {
  LoaderOptions lo;
  lo.batch_size = cfg.train.batch_size;
  lo.shuffle = cfg.data.shuffle;
  lo.crop_padding = cfg.data.crop_padding;
  lo.hflip = cfg.data.hflip;
  lo.prefetch = resolved_prefetch(cfg, threads);
  lo.dtype = dtype_of(cfg);
  lo.channels_last = channels_last(cfg);
  lo.pin_memory = cfg.compute.device != "cpu";
  lo.mean = data.mean;
  lo.std = data.std;
  return lo;
}

int64_t resolved_prefetch(const config::Config& c, int threads) {
  if (c.data.prefetch != "auto") return std::stoll(c.data.prefetch);
  // On a GPU the CPU's threads are free while it computes.
  if (c.compute.device != "cpu") return 2;
  return threads < env::cpu_budget().threads() ? 2 : 0;
}

bool channels_last(const config::Config& c) { return c.compute.memory_format == "channels_last"; }

torch::ScalarType dtype_of(const config::Config& c) {
  return c.compute.dtype == "float64" ? torch::kFloat64 : torch::kFloat32;
}

namespace {

// out[i] = table[in[i]] over `count` bytes.
template <typename T>
void map_bytes(const uint8_t* in, const T* table, T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = table[in[i]];
}

}  // namespace

torch::Tensor to_input(const torch::Tensor& images_u8, const std::vector<double>& mean,
                       const std::vector<double>& sd, torch::ScalarType dtype, bool channels_last) {
  const torch::Tensor x = images_u8.contiguous();
  const int64_t n = x.size(0), ch = x.size(1), plane = x.size(2) * x.size(3);
  // A pixel's value depends only on its byte and channel: normalise the 256
  // byte values once per channel, in double and rounded once to the target
  // type (so float32 and float64 runs see the same data up to that
  // rounding), then look every pixel up. The same tensor arithmetic as
  // normalising the batch itself, so the same values; no double copy.
  auto bytes = torch::arange(256, torch::TensorOptions().dtype(torch::kFloat64));
  torch::Tensor out = torch::empty(x.sizes(), torch::TensorOptions().dtype(dtype));
  const uint8_t* in = x.data_ptr<uint8_t>();
  for (int64_t c = 0; c < ch; ++c) {
    const torch::Tensor table = ((bytes / 255.0 - mean[c]) / sd[c]).to(dtype).contiguous();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = (i * ch + c) * plane;
      if (dtype == torch::kFloat64) {
        map_bytes(in + off, table.data_ptr<double>(), out.data_ptr<double>() + off, plane);
      } else {
        map_bytes(in + off, table.data_ptr<float>(), out.data_ptr<float>() + off, plane);
      }
    }
  }
  return channels_last ? out.contiguous(torch::MemoryFormat::ChannelsLast) : out;
}

// --- EpochLoader -------------------------------------------------------------------

EpochLoader::EpochLoader(const Dataset& data, const LoaderOptions& options, int64_t epoch,
                         uint64_t order_seed, uint64_t augment_seed, int64_t start)
    : data_(data), options_(options), epoch_(epoch), augment_seed_(augment_seed) {
  int64_t n = data.size();
  if (options.shuffle) {
    auto gen =
        at::detail::createCPUGenerator(config::mix_seed(order_seed, static_cast<uint64_t>(epoch)));
    order_ = torch::randperm(n, gen, torch::kInt64);
  } else {
    order_ = torch::arange(n, torch::kInt64);
  }
  num_batches_ = options.drop_last ? n / options.batch_size
                                   : (n + options.batch_size - 1) / options.batch_size;
  next_make_ = next_take_ = std::min(start, num_batches_);
  if (options_.prefetch > 0) worker_ = std::thread([this] { work(); });
}

EpochLoader::~EpochLoader() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

// A shard (data-parallel) makes only its rows [n*shard/shards,
// n*(shard+1)/shards) of batch b, drawing the whole batch's augmentation
// (the same streams as one process) and applying its rows' part: each row
// is made on its own, so the slice equals that of the whole batch, bit for
// bit, at 1/shards of the cost.
Batch EpochLoader::make_batch(int64_t b) const {
  const int64_t begin = b * options_.batch_size;
  const int64_t len = std::min(options_.batch_size, data_.size() - begin);
  const int64_t from = len * options_.shard / options_.shards;
  const int64_t rows = len * (options_.shard + 1) / options_.shards - from;
  auto idx = order_.narrow(0, begin + from, rows);
  auto imgs = data_.images.index_select(0, idx);
  Batch batch;
  batch.index = b;
  batch.y = data_.labels.index_select(0, idx);
  if (options_.shards > 1) batch.batch_samples = len;
  if (options_.crop_padding > 0 || options_.hflip) {
    auto gen = at::detail::createCPUGenerator(
        config::mix_seed(augment_seed_, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(b)));
    int64_t p = options_.crop_padding, h = imgs.size(2), w = imgs.size(3);
    auto offsets = torch::randint(0, 2 * p + 1, {len, 2}, gen, torch::kInt64);
    auto flips = torch::empty({len}).uniform_(0, 1, gen);
    auto padded = p > 0 ? torch::constant_pad_nd(imgs, {p, p, p, p}, 0) : imgs;
    auto out = torch::empty_like(imgs);
    auto off = offsets.accessor<int64_t, 2>();
    auto fl = flips.accessor<float, 1>();
    for (int64_t i = 0; i < rows; ++i) {
      auto img = padded[i].narrow(1, off[from + i][0], h).narrow(2, off[from + i][1], w);
      if (options_.hflip && fl[from + i] < 0.5f) img = img.flip({2});
      out[i].copy_(img);
    }
    imgs = out;
  }
  batch.x = to_input(imgs, options_.mean, options_.std, options_.dtype, options_.channels_last);
  if (options_.pin_memory) {
    batch.x = batch.x.pin_memory();
    batch.y = batch.y.pin_memory();
  }
  return batch;
}

void EpochLoader::work() {
  try {
    for (;;) {
      int64_t b;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] {
          return stop_ || (static_cast<int64_t>(ready_.size()) < options_.prefetch &&
                           next_make_ < num_batches_);
        });
        if (stop_ || next_make_ >= num_batches_) return;
        b = next_make_++;
      }
      Batch batch = make_batch(b);
      {
        std::lock_guard lock(mu_);
        ready_.push_back(std::move(batch));
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard lock(mu_);
    error_ = std::current_exception();
    cv_.notify_all();
  }
}

std::optional<Batch> EpochLoader::next() {
  if (next_take_ >= num_batches_) return std::nullopt;
  if (options_.prefetch == 0) return make_batch(next_take_++);
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (error_) std::rethrow_exception(error_);
  Batch b = std::move(ready_.front());
  ready_.pop_front();
  ++next_take_;
  lock.unlock();
  cv_.notify_all();
  return b;
}

}  // namespace trainscope::data
