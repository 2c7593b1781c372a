#include "trainscope/checkpoint/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint_code.h"
#include "trainscope/core/error.h"
#include "trainscope/core/log.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"

namespace fs = std::filesystem;

namespace trainscope::checkpoint {
using core::ErrorKind;
using core::fail;
using models::Classifier;
using optim::Optimizer;

std::string checkpoint_name(int64_t step) {
  return fmt::format("checkpoints/step-{:09d}.pt", step);
}

void write_checkpoint(std::ostream& out, Classifier& model, Optimizer& opt,
                      const at::Generator& dropout_gen, const instrument::TrainPosition& pos) {
  torch::serialize::OutputArchive a;
  torch::serialize::OutputArchive model_a, opt_a;
  model.save(model_a);
  opt.save(opt_a);
  a.write("model", model_a);
  a.write("optimizer", opt_a);
  a.write("rng.dropout", dropout_gen.get_state(), true);
  a.write("pos",
          torch::tensor({pos.epoch, pos.batch, pos.step, pos.epoch_correct, pos.epoch_seen},
                        torch::kInt64),
          true);
  a.write("pos.loss_sum", torch::tensor({pos.epoch_loss_sum}, torch::kFloat64), true);
  a.write("pos.loss_scale",
          torch::tensor({pos.loss_scale, static_cast<double>(pos.scale_growth)}, torch::kFloat64),
          true);
  // Into memory first: libtorch's zip writer throws on a short write and
  // throws again from its noexcept destructor (std::terminate), so it never
  // sees `out`; a full disk is then the writer's checked error.
  std::string bytes;
  a.save_to([&](const void* data, size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

namespace {

using torch::serialize::InputArchive;

// The checkpoint's archive is damaged, or a tensor in it does not fit what it
// is read into; what() says which, on one line.
struct Unfit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- the zip container, as libtorch's reader (miniz) reads it ----------------

constexpr uint64_t kMax32 = 0xffffffff;
constexpr uint64_t kMaxInflated = 64 << 20;  // libtorch deflates only its code files

// Little-endian fields of an archive; any read past its end is damage.
class Fields {
 public:
  explicit Fields(std::string_view bytes) : b_(bytes) {}
  uint64_t size() const { return b_.size(); }
  std::string_view span(uint64_t pos, uint64_t n) const {
    if (pos > b_.size() || n > b_.size() - pos)
      throw Unfit("its zip directory points past its end");
    return b_.substr(pos, n);
  }
  uint64_t at(uint64_t pos, int n) const {
    const std::string_view s = span(pos, n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(s[i]);
    return v;
  }

 private:
  std::string_view b_;
};

struct Directory {
  uint64_t offset = 0, size = 0;
};

// The last end record within the final 64 KiB, and the zip64 record its
// locator points to when there is one (miniz's mz_zip_reader_read_central_dir).
Directory read_directory(const Fields& f) {
  if (f.size() < 22) throw Unfit("it is too short for a zip archive");
  const uint64_t lowest = f.size() - 22 > 0xffff ? f.size() - 22 - 0xffff : 0;
  uint64_t end = f.size() - 22;
  while (f.at(end, 4) != 0x06054b50)
    if (end-- == lowest) throw Unfit("it has no zip end record");
  Directory d{f.at(end + 16, 4), f.at(end + 12, 4)};
  if (end >= 76 && f.at(end - 20, 4) == 0x07064b50) {
    const uint64_t z = f.at(end - 12, 8);
    if (z > f.size() - 56) throw Unfit("its zip64 end record lies past its end");
    if (f.at(z, 4) == 0x06064b50) d = {f.at(z + 48, 8), f.at(z + 40, 8)};
  }
  (void)f.span(d.offset, d.size);
  return d;
}

// The zip64 extended information field replaces the sizes and the offset
// recorded as 0xffffffff, in this order (miniz's mz_zip_file_stat_internal).
void read_zip64_sizes(const Fields& extra, ZipEntry& e, uint64_t& local) {
  for (uint64_t at = 0; at < extra.size();) {
    const uint64_t id = extra.at(at, 2), len = extra.at(at + 2, 2);
    const Fields field(extra.span(at + 4, len));
    at += 4 + len;
    if (id != 1) continue;
    uint64_t next = 0;
    for (uint64_t* v : {&e.size, &e.stored_size, &local})
      if (*v == kMax32) {
        *v = field.at(next, 8);
        next += 8;
      }
    return;
  }
}

// The central directory header at `at`, and where the entry's bytes start
// (after its local header, name and extra field).
ZipEntry read_entry(const Fields& f, uint64_t at) {
  ZipEntry e;
  const uint64_t name_len = f.at(at + 28, 2), extra_len = f.at(at + 30, 2);
  e.header = at;
  e.method = f.at(at + 10, 2);
  e.crc32 = static_cast<uint32_t>(f.at(at + 16, 4));
  e.stored_size = f.at(at + 20, 4);
  e.size = f.at(at + 24, 4);
  uint64_t local = f.at(at + 42, 4);
  e.name = std::string(f.span(at + 46, name_len));
  if (std::max({e.stored_size, e.size, local}) == kMax32)
    read_zip64_sizes(Fields(f.span(at + 46 + name_len, extra_len)), e, local);
  // miniz reads nothing of a directory or an empty entry, yet libtorch is
  // handed a buffer of `size` bytes for it.
  const bool directory = (!e.name.empty() && e.name.back() == '/') || (f.at(at + 38, 4) & 0x10);
  if (directory || e.stored_size == 0) {
    if (e.size != 0) throw Unfit("a zip entry claims content it does not hold");
    return e;
  }
  if (f.at(local, 4) != 0x04034b50) throw Unfit("a zip entry has no local header");
  e.data = local + 30 + f.at(local + 26, 2) + f.at(local + 28, 2);
  return e;
}

uint32_t crc_of(std::string_view b) {
  return static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(b.data()), b.size()));
}

std::optional<std::string> inflated(std::string_view in, uint64_t size) {
  if (size > kMaxInflated || in.size() > kMaxInflated) return std::nullopt;
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(size);
  const int rc = inflate(&z, Z_FINISH);
  const bool whole = rc == Z_STREAM_END && z.total_out == size;
  inflateEnd(&z);
  if (!whole) return std::nullopt;
  return out;
}

Unfit mismatched(const ZipEntry& e) {
  return Unfit(fmt::format("zip entry '{}' does not match its recorded size and CRC-32",
                           core::escape_cut(e.name, 80)));
}

// An entry libtorch parses, checked against the CRC-32 the archive records
// and returned, so that it is inflated once for both checks.
std::string checked_content(std::string_view archive, const ZipEntry& e) {
  auto content = zip_content(archive, e);
  if (!content || crc_of(*content) != e.crc32) throw mismatched(e);
  return std::move(*content);
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A pickle entry ("<root>/data.pkl", "<root>/constants.pkl", a debug
// pickle under code/): walked before libtorch's unpickler trusts it.
// Storages of NAME.pkl are the records NAME/<key>; debug pickles have none.
void check_pickle(const std::string& name, std::string_view pickle,
                  const std::map<std::string, uint64_t>& records) {
  const std::string dir =
      ends_with(name, ".pkl") ? name.substr(0, name.size() - 4) + "/" : std::string("\n");
  if (const auto why = unexpected_pickle(pickle, records, dir))
    throw Unfit(fmt::format("pickle '{}': {}", core::escape_cut(name, 80), *why));
}

// Every byte libtorch's parsers will see is checked against the CRC-32 the
// archive records: libtorch's miniz is built without these checks, and
// damage to its code or pickle entries can crash it (docs/reliability.md).
// The TorchScript source among them must also be what write_checkpoint()
// writes (libtorch's type parser crashes on some crafted classes), and the
// pickles must be well formed (its unpickler trusts their lengths).
void check_zip(std::string_view archive) {
  const auto entries = zip_entries(archive);
  std::vector<CodeFile> code;
  std::vector<std::pair<std::string, std::string>> pickles;  // name, content
  std::map<std::string, uint64_t> records;
  for (const auto& e : entries) {
    records[e.name] = e.size;
    if (is_code_entry(e.name)) {
      code.push_back({e.name, checked_content(archive, e)});
    } else if (ends_with(e.name, ".pkl") || ends_with(e.name, ".debug_pkl")) {
      pickles.push_back({e.name, checked_content(archive, e)});
    } else if (e.size > 0) {
      const auto crc = zip_content_crc(archive, e);  // tensors: no copy when stored
      if (!crc || *crc != e.crc32) throw mismatched(e);
    }
  }
  if (code.size() > 4096) throw Unfit("it holds more classes than a model has");
  if (const auto why = unexpected_code(code)) throw Unfit(*why);
  for (const auto& [name, pickle] : pickles) check_pickle(name, pickle, records);
}

// ---- tensors ---------------------------------------------------------------

// A model tensor and the checkpoint's value for it, copied in only once every
// tensor has been read and checked.
struct Staged {
  torch::Tensor into, from;
};

std::string describe(const torch::Tensor& t) {
  if (t.dim() > 8)
    return fmt::format("{} of {} dimensions", c10::toString(t.scalar_type()), t.dim());
  return fmt::format("{} [{}]", c10::toString(t.scalar_type()), fmt::join(t.sizes(), ", "));
}

// libtorch's unpickler takes a tensor's sizes, strides and offset from the
// file as they are: true when every element lies inside the storage.
bool within_storage(const torch::Tensor& t) {
  if (t.layout() != torch::kStrided || !t.has_storage() || t.storage_offset() < 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) < 0 || t.stride(d) < 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 0) return true;  // no element at all
  int64_t last = t.storage_offset(), span = 0, bytes = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (__builtin_mul_overflow(t.size(d) - 1, t.stride(d), &span) ||
        __builtin_add_overflow(last, span, &last))
      return false;
  if (__builtin_add_overflow(last, 1, &last) ||
      __builtin_mul_overflow(last, static_cast<int64_t>(t.element_size()), &bytes))
    return false;
  return static_cast<uint64_t>(bytes) <= t.storage().nbytes();
}

// `t`, read for `what`, has the dtype, shape and device of `like`.
void check_like(const torch::Tensor& t, const torch::Tensor& like, const std::string& what) {
  if (t.scalar_type() != like.scalar_type() || t.sizes() != like.sizes() ||
      t.device() != like.device())
    throw Unfit(fmt::format("{} is {} in the file, {} here", what, describe(t), describe(like)));
  if (!within_storage(t)) throw Unfit(fmt::format("{} lies outside its storage", what));
}

// Reads the parameters and buffers of `m` and its children, laid out as
// Module::save writes them, into new tensors checked against the model's.
void stage(torch::nn::Module& m, InputArchive& a, const std::string& prefix,
           std::vector<Staged>& out) {
  const auto take = [&](const std::string& key, const torch::Tensor& into, bool buffer) {
    torch::Tensor from;
    a.read(key, from, buffer);
    check_like(from, into, prefix + key);
    out.push_back({into, from});
  };
  for (const auto& p : m.named_parameters(/*recurse=*/false)) take(p.key(), p.value(), false);
  for (const auto& b : m.named_buffers(/*recurse=*/false)) take(b.key(), b.value(), true);
  for (const auto& c : m.named_children()) {
    if (!c.value()->is_serializable()) continue;
    InputArchive child;
    a.read(c.key(), child);
    stage(*c.value(), child, prefix + c.key() + ".", out);
  }
}

// libtorch's optimizers take their state tensors as the file has them; the
// fused Adam then writes a parameter's numel() elements into each.
void read_optimizer(InputArchive& a, Optimizer& opt) {
  InputArchive opt_a;
  a.read("optimizer", opt_a);
  opt.load(opt_a);
  for (const auto& [param, state] : opt.state_tensors()) {
    check_like(state, param, "optimizer state");
    if (!state.is_non_overlapping_and_dense())
      throw Unfit("an optimizer state tensor is not dense");
  }
}

// Whether `bytes` is the size of a CPU generator's state or a CUDA one's
// (a seed and an offset).
bool generator_state_size(int64_t bytes) {
  static const int64_t cpu = at::detail::createCPUGenerator(0).get_state().numel();
  return bytes == cpu || bytes == 16;
}

// The archive is read onto the model's device: small tensors come back to
// the CPU, where they are read.
torch::Tensor read_rng_state(InputArchive& a) {
  torch::Tensor state;
  a.read("rng.dropout", state, true);
  if (state.scalar_type() != torch::kByte || state.dim() != 1 || !within_storage(state) ||
      !state.is_contiguous())
    throw Unfit(fmt::format("rng.dropout is {}, not a generator state", describe(state)));
  return state.to(torch::kCPU);
}

instrument::TrainPosition read_position(InputArchive& a) {
  torch::Tensor p, loss;
  a.read("pos", p, true);
  a.read("pos.loss_sum", loss, true);
  p = p.to(torch::kCPU);
  loss = loss.to(torch::kCPU);
  check_like(p, torch::empty({5}, torch::kInt64), "pos");
  check_like(loss, torch::empty({1}, torch::kFloat64), "pos.loss_sum");
  const auto pa = p.accessor<int64_t, 1>();
  instrument::TrainPosition pos{.epoch = pa[0],
                                .batch = pa[1],
                                .step = pa[2],
                                .epoch_loss_sum = loss.item<double>(),
                                .epoch_correct = pa[3],
                                .epoch_seen = pa[4]};
  // Checkpoints written before mixed precision have no loss scale.
  if (torch::Tensor scale; a.try_read("pos.loss_scale", scale, true)) {
    scale = scale.to(torch::kCPU);
    check_like(scale, torch::empty({2}, torch::kFloat64), "pos.loss_scale");
    const auto sa = scale.accessor<double, 1>();
    // The scaler keeps a float32 scale (0: none; else a normal float32) and
    // an int32 count of good steps.
    const bool scale_ok = sa[0] == 0 || (sa[0] >= std::numeric_limits<float>::min() &&
                                         sa[0] <= std::numeric_limits<float>::max());
    const bool count_ok =
        sa[1] >= 0 && sa[1] <= std::numeric_limits<int32_t>::max() && sa[1] == std::floor(sa[1]);
    if (!scale_ok || !count_ok) throw Unfit("pos.loss_scale holds an impossible scale");
    pos.loss_scale = sa[0];
    pos.scale_growth = static_cast<int64_t>(sa[1]);
  }
  if (pos.epoch < 0 || pos.batch < 0 || pos.step < 0 || pos.epoch_correct < 0 ||
      pos.epoch_seen < pos.epoch_correct)
    throw Unfit("pos holds impossible counts");
  return pos;
}

// Everything is read and checked before the model and the generator change.
instrument::TrainPosition read_archive(InputArchive& a, Classifier& model, Optimizer* opt,
                                       at::Generator* dropout_gen) {
  std::vector<Staged> weights;
  InputArchive model_a;
  a.read("model", model_a);
  stage(model, model_a, "", weights);
  if (opt) read_optimizer(a, *opt);
  torch::Tensor rng_state;
  if (dropout_gen) rng_state = read_rng_state(a);
  const instrument::TrainPosition pos = read_position(a);
  // A generator of another device (a checkpoint of a CPU run resumed on a
  // GPU) has a state of another kind: the dropout stream then goes on from
  // its seed on the new device (docs/gpu.md), the weights and the
  // optimizer's state as they were.
  const bool same_kind = dropout_gen && dropout_gen->get_state().numel() == rng_state.numel();
  if (dropout_gen && !same_kind && !generator_state_size(rng_state.numel()))
    throw Unfit(fmt::format("rng.dropout is {}, not a generator state", describe(rng_state)));
  if (same_kind)
    dropout_gen->set_state(rng_state);
  else if (dropout_gen)
    core::log_warn(
        "the checkpoint's dropout generator is of another device; its stream starts "
        "again from the run's dropout seed here");
  torch::NoGradGuard no_grad;
  for (auto& w : weights) w.into.copy_(w.from);
  return pos;
}

// A file's bytes, mapped read-only while this lives. (Checkpoints are
// written once and never changed in place, so the mapping cannot shrink.)
class MappedFile {
 public:
  explicit MappedFile(const fs::path& path) {
    const int fd = core::open_regular_file(path, "checkpoint");  // a FIFO: refused, not waited on
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      fail(ErrorKind::kStore, "checkpoint '{}' cannot be read: {}", path.string(),
           std::strerror(err));
    }
    size_ = static_cast<size_t>(st.st_size);
    void* p = size_ > 0 ? ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED)
      fail(ErrorKind::kStore, "checkpoint '{}' cannot be read: {}", path.string(),
           std::strerror(err));
    data_ = static_cast<const char*>(p);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// Whatever libtorch throws while opening or reading the archive (c10::Error,
// a missing key, a value of the wrong type) is one message naming the file.
instrument::TrainPosition read_guarded(const std::string& name,
                                       const std::function<void(InputArchive&)>& open,
                                       Classifier& model, Optimizer* opt,
                                       at::Generator* dropout_gen) {
  std::string why;
  try {
    InputArchive a;
    open(a);
    return read_archive(a, model, opt, dropout_gen);
  } catch (const Unfit& e) {
    why = fmt::format(" ({})", e.what());
  } catch (const std::exception&) {  // libtorch's own text spans lines (a backtrace)
  }
  fail(ErrorKind::kStore,
       "checkpoint '{}' cannot be read; it is damaged or not a trainscope checkpoint{}", name, why);
}

}  // namespace

instrument::TrainPosition read_checkpoint(const fs::path& path, Classifier& model, Optimizer* opt,
                                          at::Generator* dropout_gen) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail(ErrorKind::kNotFound, "checkpoint '{}' does not exist (moved or deleted?)", path.string());
  const MappedFile file(path);
  return read_checkpoint(file.data(), file.size(), path.string(), model, opt, dropout_gen);
}

instrument::TrainPosition read_checkpoint(const char* data, size_t size, const std::string& name,
                                          Classifier& model, Optimizer* opt,
                                          at::Generator* dropout_gen) {
  return read_guarded(
      name,
      [&](InputArchive& a) {
        check_zip({data, size});
        // Onto the model's device, wherever the checkpoint was written.
        const auto params = model.parameters();
        a.load_from(data, size, params.empty() ? torch::kCPU : params.front().device());
      },
      model, opt, dropout_gen);
}

std::optional<std::string> archive_problem(std::string_view archive) {
  try {
    check_zip(archive);
    return std::nullopt;
  } catch (const std::exception& e) {  // Unfit, or zip_entries' runtime_error
    return std::string(e.what());
  }
}

std::vector<ZipEntry> zip_entries(std::string_view archive) {
  const Fields f(archive);
  const Directory d = read_directory(f);
  std::vector<ZipEntry> out;
  for (uint64_t at = d.offset, end = d.offset + d.size; at < end;) {
    if (end - at < 46 || f.at(at, 4) != 0x02014b50) break;  // miniz reads no further
    out.push_back(read_entry(f, at));
    at += 46 + f.at(at + 28, 2) + f.at(at + 30, 2) + f.at(at + 32, 2);
  }
  return out;
}

std::optional<std::string> zip_content(std::string_view archive, const ZipEntry& e) {
  if (e.stored_size == 0) return e.size == 0 ? std::optional<std::string>("") : std::nullopt;
  if (e.data > archive.size() || e.stored_size > archive.size() - e.data) return std::nullopt;
  const std::string_view bytes = archive.substr(e.data, e.stored_size);
  if (e.method == 0)
    return e.size == e.stored_size ? std::optional(std::string(bytes)) : std::nullopt;
  if (e.method != 8) return std::nullopt;
  return inflated(bytes, e.size);
}

std::optional<uint32_t> zip_content_crc(std::string_view archive, const ZipEntry& e) {
  if (e.method == 0 && e.stored_size > 0 && e.size == e.stored_size && e.data <= archive.size() &&
      e.stored_size <= archive.size() - e.data)
    return crc_of(archive.substr(e.data, e.stored_size));  // no copy of a tensor's bytes
  const auto content = zip_content(archive, e);
  return content ? std::optional(crc_of(*content)) : std::nullopt;
}

std::optional<store::ArtifactInfo> find_checkpoint(store::Store& store, const std::string& uuid,
                                                   const std::string& name) {
  std::optional<store::ArtifactInfo> best;
  for (auto& a : store.artifacts(uuid)) {
    if (a.kind != kCheckpointKind) continue;
    if (!name.empty()) {
      if (a.name == name || a.name == "checkpoints/" + name) {
        store::verify_artifact(a);
        return a;
      }
      continue;
    }
    if (!best || a.name > best->name) best = a;
  }
  if (best) store::verify_artifact(*best);  // never train on from a damaged file
  return best;
}

store::ArtifactInfo require_checkpoint(store::Store& store, const store::RunInfo& run,
                                       const std::string& name) {
  if (auto ck = find_checkpoint(store, run.uuid, name)) return *ck;
  std::string have;
  for (const auto& a : store.artifacts(run.uuid))
    if (a.kind == kCheckpointKind) have += (have.empty() ? "" : ", ") + a.name;
  fail(ErrorKind::kNotFound, "run {} has no checkpoint{}; available: {}",
       core::short_uuid(run.uuid), name.empty() ? "" : " '" + name + "'",
       have.empty() ? "none" : have);
}

}  // namespace trainscope::checkpoint
