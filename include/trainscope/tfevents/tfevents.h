// TensorBoard event files: TFRecord framing with masked CRC-32C and the
// Event / Summary messages of TensorBoard's public schema (the part in
// src/tfevents/proto/tensorboard_event.proto, libprotobuf). Written by the
// probes (a training's live TensorBoard file) and by `runs export --format
// tfevents`; read by `import tfevents`. Depends on core only.
//
// A file is a sequence of records, each: uint64 length (little-endian),
// masked CRC-32C of those 8 bytes, `length` bytes of a serialised Event,
// masked CRC-32C of those bytes. The first Event holds file_version
// "brain.Event:2"; every later one a step, a wall time and a Summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace trainscope::tfevents {

// CRC-32C (Castagnoli) and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t n);
// TFRecord's mask of crc32c(data, n): rotated right by 15 plus 0xa282ead8.
// Both pure.
uint32_t masked_crc32c(const void* data, size_t n);

// TensorBoard's HistogramProto: buckets given by their right edges.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // right edge of each bucket
  std::vector<double> bucket;        // count in each bucket
};

// One event file being written. Not thread-safe: one writer per thread,
// or the caller's lock (the probes' hub calls it from its output thread).
class Writer {
 public:
  // Creates `dir` (with its parents) and `dir`/events.out.tfevents.<unix
  // seconds>.<host>, and writes the file_version Event, both at `file_time`
  // (Unix seconds; 0: now). An export passes its run's start, so that a
  // reader takes the file's first event for when the run began, not for
  // when it was exported. Throws Error(kUsage) naming the file when it
  // cannot be created.
  explicit Writer(const std::filesystem::path& dir, double file_time = 0);
  // Closes the file if close() was not called; a failed write is then lost
  // without an error.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // The event file; valid while the writer is.
  const std::filesystem::path& path() const { return path_; }

  // A scalar as TensorBoard's simple_value: float32, as every TensorBoard
  // and every reader of event files understands it.
  void scalar(const std::string& tag, int64_t step, double wall_time, float value);
  // A scalar as a DT_DOUBLE tensor of shape [] with the scalars plugin's
  // metadata on the tag's first value (what TensorFlow 2's tf.summary.scalar
  // writes, in double): TensorBoard shows it as any scalar, and the value
  // reads back bit for bit.
  void scalar_double(const std::string& tag, int64_t step, double wall_time, double value);
  // A histogram as TensorBoard's HistogramProto.
  void histogram(const std::string& tag, int64_t step, double wall_time, const Histogram& h);

  // Flushes and closes the file; throws Error(kUsage) naming it when a write
  // failed (a full disk). The destructor closes without throwing.
  void close();

 private:
  void write_record(const std::string& bytes);
  std::filesystem::path path_;
  std::ofstream out_;
  std::set<std::string> described_;  // tags whose plugin metadata is written
};

// One scalar read from an event file.
struct Scalar {
  std::string tag;
  int64_t step = 0;
  double wall_time = 0;
  // The value widened to double exactly: a simple_value (float32), or a
  // one-element tensor of dtype DT_FLOAT or DT_DOUBLE (float_val,
  // double_val or tensor_content).
  double value = 0;
};

// What one event file holds, as far as scalars go.
struct FileScalars {
  std::vector<Scalar> scalars;  // in file order
  int64_t records = 0;          // every record, the file_version one included
  // Summary values that are not scalars (histograms, images, text, audio,
  // tensors of another dtype or shape, or of a tag another plugin owns).
  int64_t skipped = 0;
  double first_wall_time = 0, last_wall_time = 0;  // over every Event; 0 if none
};

// Each tag's plugin ("scalars", "histograms", ...) as the metadata of its
// first value in a run names it ("" when that value had none): TensorBoard
// reads a run's later values of the tag by it, in whichever file they are.
using TagPlugins = std::map<std::string, std::string>;

// Reads every record of `file`, checking each record's length CRC and data
// CRC. Throws Error(kUsage), one line naming the file and the record's byte
// offset, for a bad CRC, a record cut short or a record that is not an
// Event; Error(kNotFound) when the file cannot be opened. As TensorBoard,
// a simple_value is a scalar, and a tensor value one when its tag's plugin
// is "scalars". `plugins` carries the tags' plugins from one file of a run
// to the next (read its files in name order).
FileScalars read_scalars(const std::filesystem::path& file, TagPlugins& plugins);

// True for a file name TensorBoard reads as an event file: one that
// contains "tfevents".
bool is_event_file(const std::filesystem::path& file);

}  // namespace trainscope::tfevents
