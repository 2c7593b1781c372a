#include "trainscope/tfevents/tfevents.h"

#include <fmt/format.h>
#include <google/protobuf/stubs/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>

#include "tensorboard_event.pb.h"
#include "trainscope/core/error.h"
#include "trainscope/core/regular_file.h"
#include "trainscope/core/util.h"

namespace trainscope::tfevents {

namespace {

using core::ErrorKind;
using core::fail;
namespace pb = trainscope::tensorboard;

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return kTable;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// TFRecord stores its integers little-endian; so does every platform
// libtorch runs on, and the reader below checks the CRCs of what it reads.
uint64_t load_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint32_t load_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  const auto& t = crc_table();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = t[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

bool is_event_file(const std::filesystem::path& file) {
  return file.filename().string().find("tfevents") != std::string::npos;
}

// --- writing ------------------------------------------------------------------

Writer::Writer(const std::filesystem::path& dir, double file_time) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const double now = file_time > 0 ? file_time : core::unix_now();
  path_ = dir / fmt::format("events.out.tfevents.{}.{}", static_cast<int64_t>(now), host_name());
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) core::fail_writing(fmt::format("TensorBoard events to '{}'", path_.string()), errno);
  pb::Event e;
  e.set_wall_time(now);
  e.set_file_version("brain.Event:2");
  write_record(e.SerializeAsString());
}

Writer::~Writer() {
  if (out_.is_open()) out_.close();
}

void Writer::write_record(const std::string& bytes) {
  uint64_t len = bytes.size();
  char header[12];
  std::memcpy(header, &len, 8);
  uint32_t len_crc = masked_crc32c(header, 8);
  std::memcpy(header + 8, &len_crc, 4);
  uint32_t data_crc = masked_crc32c(bytes.data(), bytes.size());
  out_.write(header, 12);
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out_.write(reinterpret_cast<const char*>(&data_crc), 4);
}

namespace {

// A tag as valid UTF-8: a proto3 string that is not (a store's key, bytes
// from anywhere) makes TensorBoard refuse the whole file.
std::string utf8_tag(std::string_view tag) { return core::valid_utf8(tag); }

// An event at (step, wall_time) holding one summary value tagged `tag`.
pb::Summary::Value* summary_value(pb::Event& e, const std::string& tag, int64_t step,
                                  double wall_time) {
  e.set_wall_time(wall_time);
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(utf8_tag(tag));
  return v;
}

}  // namespace

void Writer::scalar(const std::string& tag, int64_t step, double wall_time, float value) {
  pb::Event e;
  auto* v = summary_value(e, tag, step, wall_time);
  v->set_simple_value(value);
  write_record(e.SerializeAsString());
}

void Writer::scalar_double(const std::string& tag, int64_t step, double wall_time, double value) {
  pb::Event e;
  auto* v = summary_value(e, tag, step, wall_time);
  if (described_.insert(tag).second) {
    auto* md = v->mutable_metadata();
    md->mutable_plugin_data()->set_plugin_name("scalars");
    md->set_data_class(1);  // DATA_CLASS_SCALAR
  }
  auto* t = v->mutable_tensor();
  t->set_dtype(pb::DT_DOUBLE);
  t->mutable_tensor_shape();  // rank 0
  t->add_double_val(value);
  write_record(e.SerializeAsString());
}

void Writer::histogram(const std::string& tag, int64_t step, double wall_time, const Histogram& h) {
  pb::Event e;
  auto* v = summary_value(e, tag, step, wall_time);
  auto* hp = v->mutable_histo();
  hp->set_min(h.min);
  hp->set_max(h.max);
  hp->set_num(h.num);
  hp->set_sum(h.sum);
  hp->set_sum_squares(h.sum_squares);
  for (double l : h.bucket_limit) hp->add_bucket_limit(l);
  for (double c : h.bucket) hp->add_bucket(c);
  write_record(e.SerializeAsString());
}

void Writer::close() {
  if (!out_.is_open()) return;
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  const int err = errno;
  out_.close();
  if (!ok || !out_) core::fail_writing(fmt::format("'{}'", path_.string()), ok ? 0 : err);
}

// --- reading ------------------------------------------------------------------

namespace {

// An event file read record by record, each checked before the next is
// read: a damaged header is refused at once, in the memory of one record
// (the whole file was read first: an 8 GB file of zeros took 8 GB to say
// its first header is bad; thirty-fourth hunt, A-B).
class RecordReader {
 public:
  RecordReader(const std::filesystem::path& file, int fd, uint64_t size)
      : file_(file), fd_(fd), size_(size) {}
  ~RecordReader() { ::close(fd_); }
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  uint64_t pos() const { return pos_; }
  // The next record's data (checked: both CRCs), or false at the end.
  bool next(std::string& data) {
    if (pos_ >= size_) return false;
    if (size_ - pos_ < 12) bad("is cut short (its 12-byte header is incomplete)");
    std::array<char, 12> head{};
    read_exactly(head.data(), head.size());
    const uint64_t len = load_u64(head.data());
    if (load_u32(head.data() + 8) != masked_crc32c(head.data(), 8)) bad("has a bad length CRC");
    const uint64_t left = size_ - pos_ - 12;
    if (len > left || left - len < 4 || len > INT32_MAX)
      bad(fmt::format("is cut short ({} bytes announced, {} left)", len, left));
    data.resize(len + 4);
    read_exactly(data.data(), data.size());
    const uint32_t crc = load_u32(data.data() + len);
    data.resize(len);
    if (crc != masked_crc32c(data.data(), data.size())) bad("has a bad data CRC");
    pos_ += 16 + len;
    return true;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(ErrorKind::kUsage,
         "{}: the record at byte {} {}; the file is damaged, nothing of its folder was imported",
         file_.string(), pos_, what);
  }
  // `n` bytes of the record at pos_ (the file's size said they are there).
  void read_exactly(char* out, size_t n) {
    for (size_t got = 0; got < n;) {
      const ssize_t r = ::read(fd_, out + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0)
        fail(ErrorKind::kRuntime, "cannot read event file '{}': {}", file_.string(),
             std::strerror(errno));
      if (r == 0) bad("is cut short (the file shrank while it was read)");
      got += static_cast<size_t>(r);
    }
  }

  const std::filesystem::path& file_;
  int fd_;
  uint64_t size_, pos_ = 0;
};

// IEEE half-precision bits as a double (subnormals, inf and NaN kept).
double half_to_double(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const double frac = h & 0x3ff;
  const double v = exp == 0    ? std::ldexp(frac, -24)
                   : exp == 31 ? (frac == 0 ? HUGE_VAL : std::nan(""))
                               : std::ldexp(frac + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// One element of a dtype as a double, from its little-endian bytes.
std::optional<double> element(pb::DataType type, const char* p) {
  const auto byte = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  const uint32_t u16 = byte(0) | byte(1) << 8;
  switch (type) {
    case pb::DT_DOUBLE:
      return std::bit_cast<double>(load_u64(p));
    case pb::DT_FLOAT:
      return static_cast<double>(std::bit_cast<float>(load_u32(p)));
    case pb::DT_HALF:
      return half_to_double(static_cast<uint16_t>(u16));
    case pb::DT_BFLOAT16:
      return static_cast<double>(std::bit_cast<float>(u16 << 16));
    case pb::DT_INT8:
      return static_cast<double>(static_cast<int8_t>(byte(0)));
    case pb::DT_UINT8:
      return static_cast<double>(byte(0));
    case pb::DT_BOOL:
      return byte(0) != 0 ? 1.0 : 0.0;
    case pb::DT_INT16:
      return static_cast<double>(static_cast<int16_t>(u16));
    case pb::DT_UINT16:
      return static_cast<double>(u16);
    case pb::DT_INT32:
      return static_cast<double>(static_cast<int32_t>(load_u32(p)));
    case pb::DT_UINT32:
      return static_cast<double>(load_u32(p));
    case pb::DT_INT64:
      return static_cast<double>(static_cast<int64_t>(load_u64(p)));
    case pb::DT_UINT64:
      return static_cast<double>(load_u64(p));
    default:
      return std::nullopt;
  }
}

size_t element_bytes(pb::DataType type) {
  switch (type) {
    case pb::DT_DOUBLE:
    case pb::DT_INT64:
    case pb::DT_UINT64:
      return 8;
    case pb::DT_FLOAT:
    case pb::DT_INT32:
    case pb::DT_UINT32:
      return 4;
    case pb::DT_HALF:
    case pb::DT_BFLOAT16:
    case pb::DT_INT16:
    case pb::DT_UINT16:
      return 2;
    default:
      return 1;
  }
}

// The one element of a typed field (float_val, int_val, ...), as TensorFlow's
// make_ndarray reads it for the tensor's dtype.
std::optional<double> field_element(const pb::TensorProto& t) {
  const auto type = t.dtype();
  // A value the dtype cannot hold is none of its values: TensorBoard's
  // reader raises on it (thirty-eighth hunt, A-D10); left out and counted.
  const auto in = [](int64_t v, int64_t lo, int64_t hi) -> std::optional<double> {
    if (v < lo || v > hi) return std::nullopt;
    return static_cast<double>(v);
  };
  if (type == pb::DT_DOUBLE && t.double_val_size() == 1) return t.double_val(0);
  if (type == pb::DT_FLOAT && t.float_val_size() == 1) return t.float_val(0);
  if ((type == pb::DT_HALF || type == pb::DT_BFLOAT16) && t.half_val_size() == 1) {
    if (t.half_val(0) < 0 || t.half_val(0) > 0xffff) return std::nullopt;
    const auto bits = static_cast<uint32_t>(t.half_val(0));
    return type == pb::DT_HALF ? half_to_double(static_cast<uint16_t>(bits))
                               : static_cast<double>(std::bit_cast<float>(bits << 16));
  }
  if (t.int_val_size() == 1) {
    const int64_t v = t.int_val(0);
    if (type == pb::DT_INT32) return static_cast<double>(v);
    if (type == pb::DT_INT16) return in(v, INT16_MIN, INT16_MAX);
    if (type == pb::DT_INT8) return in(v, INT8_MIN, INT8_MAX);
    if (type == pb::DT_UINT16) return in(v, 0, UINT16_MAX);
    if (type == pb::DT_UINT8) return in(v, 0, UINT8_MAX);
  }
  if (type == pb::DT_INT64 && t.int64_val_size() == 1) return static_cast<double>(t.int64_val(0));
  if (type == pb::DT_BOOL && t.bool_val_size() == 1) return t.bool_val(0) ? 1.0 : 0.0;
  if (type == pb::DT_UINT32 && t.uint32_val_size() == 1)
    return static_cast<double>(t.uint32_val(0));
  if (type == pb::DT_UINT64 && t.uint64_val_size() == 1)
    return static_cast<double>(t.uint64_val(0));
  return std::nullopt;
}

// A tensor's only element widened to double, if it is one element of a real
// dtype TensorBoard reads as a number (thirty-seventh hunt, B-D3: half,
// integers and bool were left out). One element is a shape of 1s only: a
// product of the dims could wrap (7 x 0x6DB6DB6DB6DB6DB7) or take two
// negatives for a 1.
std::optional<double> tensor_scalar(const pb::TensorProto& t) {
  if (t.tensor_shape().unknown_rank()) return std::nullopt;
  for (const auto& d : t.tensor_shape().dim())
    if (d.size() != 1) return std::nullopt;
  const std::string& raw = t.tensor_content();
  // tensor_content first, as TensorFlow's make_ndarray (and so TensorBoard)
  // reads a tensor that holds both.
  if (!raw.empty())
    return raw.size() == element_bytes(t.dtype()) ? element(t.dtype(), raw.data()) : std::nullopt;
  return field_element(t);
}

// The scalars of one Event into `out`.
void add_event(const pb::Event& e, TagPlugins& plugins, FileScalars& out) {
  for (const auto& v : e.summary().value()) {
    const std::string& plugin =
        plugins.emplace(v.tag(), v.metadata().plugin_data().plugin_name()).first->second;
    std::optional<double> value;
    if (v.value_case() == pb::Summary::Value::kSimpleValue) {
      value = static_cast<double>(v.simple_value());
    } else if (v.value_case() == pb::Summary::Value::kTensor && plugin == "scalars") {
      value = tensor_scalar(v.tensor());
    }
    if (!value) {
      ++out.skipped;
      continue;
    }
    out.scalars.push_back({v.tag(), e.step(), e.wall_time(), *value});
  }
}

}  // namespace

FileScalars read_scalars(const std::filesystem::path& file, TagPlugins& plugins) {
  // A FIFO or a device is refused, never waited on or read without end.
  const int fd = core::open_regular_file(file, "event file");
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    fail(ErrorKind::kNotFound, "cannot read event file '{}'; check that it exists and is readable",
         file.string());
  }
  RecordReader records(file, fd, static_cast<uint64_t>(st.st_size));
  // What the parser would print about bytes it refuses is said in
  // trainscope's own one line (the text fields are `bytes`: the key rule
  // refuses a tag that is not UTF-8, naming it).
  static std::once_flag quiet;
  std::call_once(quiet, [] { google::protobuf::SetLogHandler(nullptr); });
  FileScalars out;
  std::string data;
  for (uint64_t pos = 0; records.next(data); pos = records.pos()) {
    pb::Event e;
    if (!e.ParseFromArray(data.data(), static_cast<int>(data.size())))
      fail(ErrorKind::kUsage,
           "{}: the record at byte {} is not a TensorBoard Event; nothing of its folder was "
           "imported",
           file.string(), pos);
    // An event's time is untrusted bytes: seconds since 1970, before the
    // year 10000, or the import is refused (a reader would show no date).
    if (const double w = e.wall_time(); !(w >= 0 && w < 253402300800.0))
      fail(ErrorKind::kUsage,
           "{}: the record at byte {} has wall_time {}, which is not a time (seconds since "
           "1970, before the year 10000); nothing of its folder was imported",
           file.string(), pos, core::format_short(e.wall_time()));
    ++out.records;
    if (out.records == 1 || e.wall_time() < out.first_wall_time)
      out.first_wall_time = e.wall_time();
    out.last_wall_time = std::max(out.last_wall_time, e.wall_time());
    add_event(e, plugins, out);
  }
  return out;
}

}  // namespace trainscope::tfevents
