#include "trainscope/store/payload.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "trainscope/core/error.h"
#include "trainscope/store/accept.h"

namespace trainscope::store {

static_assert(std::endian::native == std::endian::little,
              "record payloads are little-endian; add byte swapping for this target");

PayloadWriter& PayloadWriter::u64(uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out_.append(b, 8);
  return *this;
}

PayloadWriter& PayloadWriter::f64(double v) { return u64(std::bit_cast<uint64_t>(v)); }

PayloadWriter& PayloadWriter::uvarint(uint64_t v) {
  do {
    const auto byte = static_cast<uint8_t>(v & 0x7f);
    v >>= 7;
    out_.push_back(static_cast<char>(byte | (v ? 0x80 : 0)));
  } while (v);
  return *this;
}

PayloadWriter& PayloadWriter::bytes(std::string_view s) {
  uvarint(s.size());
  out_.append(s);
  return *this;
}

PayloadReader::PayloadReader(std::string_view payload, std::string what)
    : in_(payload), what_(std::move(what)) {}

void PayloadReader::damaged(std::string_view problem) const {
  core::fail(core::ErrorKind::kStore, "{}: {}; the store is damaged", what_, problem);
}

void PayloadReader::need(size_t n) const {
  if (in_.size() - at_ < n)
    damaged(fmt::format("payload of {} bytes ends at byte {} where {} more were expected",
                        in_.size(), at_, n));
}

uint64_t PayloadReader::u64() {
  need(8);
  uint64_t v;
  std::memcpy(&v, in_.data() + at_, 8);
  at_ += 8;
  return v;
}

double PayloadReader::f64() { return std::bit_cast<double>(u64()); }

uint64_t PayloadReader::uvarint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    need(1);
    const auto byte = static_cast<uint8_t>(in_[at_++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  damaged(fmt::format("a varint at byte {} is longer than 10 bytes", at_));
}

uint64_t PayloadReader::count(size_t min_item_bytes) {
  const uint64_t n = uvarint();
  const size_t left = in_.size() - at_;
  if (min_item_bytes > 0 && n > left / min_item_bytes)
    damaged(fmt::format("a count of {} items does not fit in the {} bytes left", n, left));
  return n;
}

std::string PayloadReader::bytes() {
  const uint64_t n = uvarint();
  if (n > in_.size() - at_) need(n);
  std::string out(in_.substr(at_, n));
  at_ += n;
  return out;
}

void PayloadReader::finish() const {
  if (!done()) damaged(fmt::format("{} bytes left over after byte {}", in_.size() - at_, at_));
}

int64_t checked_step(int64_t step, std::string_view what) {
  if (auto why = step_problem(step))
    core::fail(core::ErrorKind::kStore, "{}: its {}; the store is damaged", what, *why);
  return step;
}

}  // namespace trainscope::store
