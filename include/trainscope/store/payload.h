// Packing a record's payload (Store::append_records): the few primitives
// the capabilities' codecs build their layouts from, so that every layout
// in docs/store_format.md is spelled in the same terms. Little-endian
// fixed-width numbers, LEB128 varints, length-prefixed byte strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::store {

// Appends to a payload. Not thread-safe (one per payload).
class PayloadWriter {
 public:
  PayloadWriter& u64(uint64_t v);            // 8 bytes, little-endian
  PayloadWriter& f64(double v);              // the 8 bytes of its IEEE-754 bits
  PayloadWriter& uvarint(uint64_t v);        // unsigned LEB128: 1 to 10 bytes
  PayloadWriter& bytes(std::string_view s);  // uvarint length, then the bytes
  // The bytes so far (valid until the next append); take() moves them
  // out (use a new writer after it).
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads a payload written by PayloadWriter, in the same order. Every read
// past the end, an overlong varint, or (finish) bytes left over throws
// Error(kStore): "<what>: <problem>; the store is damaged", where `what`
// names the record ("histograms record of run 1a2b3c4d, step 10").
class PayloadReader {
 public:
  // Reads `payload` in place: it must outlive the reader. `what` names the
  // record in errors.
  PayloadReader(std::string_view payload, std::string what);
  uint64_t u64();      // as PayloadWriter::u64 wrote it
  double f64();        // bit for bit (NaN payloads included)
  uint64_t uvarint();  // more than 10 bytes: damaged
  // A count of items that each take at least `min_item_bytes` more bytes:
  // refused when the payload cannot hold that many (a damaged count would
  // otherwise reserve memory for nothing).
  uint64_t count(size_t min_item_bytes);
  // A length-prefixed string, copied out.
  std::string bytes();
  // Whether every byte was read.
  bool done() const { return at_ == in_.size(); }
  // Throws unless every byte was read.
  void finish() const;
  // Throws Error(kStore): "<what>: <problem>; the store is damaged", for a
  // value its reader finds no writer records.
  [[noreturn]] void damaged(std::string_view problem) const;

 private:
  void need(size_t n) const;

  std::string_view in_;
  size_t at_ = 0;
  std::string what_;
};

// A record's stored step read back (`what`: "histograms record k of run
// 3f2a"): one no writer records (accept.h's step rule; the store itself
// keeps any) throws Error(kStore), the store is damaged; else `step`.
int64_t checked_step(int64_t step, std::string_view what);

}  // namespace trainscope::store
