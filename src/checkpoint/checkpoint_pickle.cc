// The pickles of a checkpoint, walked as libtorch 1.13's unpickler would
// walk them, before it does (checkpoint_code.h).
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "checkpoint_code.h"
#include "trainscope/core/nesting.h"
#include "trainscope/core/util.h"

namespace trainscope::checkpoint {
namespace {

// What the walk keeps of a value: enough to read a storage's persistent id.
struct Value {
  enum Kind { kStr, kInt, kGlobal, kTuple, kOther } kind = kOther;
  std::string text;  // kStr, kGlobal ("module.name")
  int64_t number = 0;
  std::shared_ptr<const std::vector<Value>> items;  // kTuple
  // How deep the containers the unpickler builds for it nest (0: none).
  // libtorch builds and destroys nested values recursively, and so would
  // this walk's tuples: a pickle of a million nested lists or tuples is
  // a few megabytes.
  int depth = 0;
};

// Bytes per element of the storage classes libtorch writes.
int64_t element_size(const std::string& global) {
  static const std::map<std::string, int64_t> kSizes = {
      {"torch.FloatStorage", 4},        {"torch.DoubleStorage", 8},
      {"torch.HalfStorage", 2},         {"torch.BFloat16Storage", 2},
      {"torch.LongStorage", 8},         {"torch.IntStorage", 4},
      {"torch.ShortStorage", 2},        {"torch.CharStorage", 1},
      {"torch.ByteStorage", 1},         {"torch.BoolStorage", 1},
      {"torch.ComplexFloatStorage", 8}, {"torch.ComplexDoubleStorage", 16}};
  const auto it = kSizes.find(global);
  return it == kSizes.end() ? 0 : it->second;
}

class Walk {
 public:
  Walk(std::string_view bytes, const std::map<std::string, uint64_t>& records,
       std::string record_dir)
      : b_(bytes), records_(records), dir_(std::move(record_dir)) {}

  // nullopt when the pickle is well formed; else what is wrong.
  std::optional<std::string> run() {
    while (at_ < b_.size()) {
      const auto op = static_cast<uint8_t>(b_[at_++]);
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty()) return "it stops without exactly one value";
        if (at_ != b_.size()) return "bytes follow its end";
        return std::nullopt;
      }
      if (auto why = step(op))
        return fmt::format("{} (opcode 0x{:02x} at byte {})", *why, op, at_ - 1);
    }
    return "it has no end";
  }

 private:
  std::optional<uint64_t> take(size_t n) {  // a little-endian field
    if (n > b_.size() - at_) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | static_cast<uint8_t>(b_[at_ + i]);
    at_ += n;
    return v;
  }
  std::optional<std::string> line() {
    const size_t nl = b_.find('\n', at_);
    if (nl == b_.npos || nl - at_ > 256) return std::nullopt;
    std::string s(b_.substr(at_, nl - at_));
    at_ = nl + 1;
    return s;
  }
  // Values above the innermost mark (what an opcode may consume).
  size_t free_values() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  std::optional<std::string> pop_to_mark(std::vector<Value>* out, size_t below) {
    if (marks_.empty()) return "it has no mark to pop to";
    const size_t m = marks_.back();
    marks_.pop_back();
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (m < floor + below) return "it pops below a mark";
    if (out) out->assign(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return std::nullopt;
  }
  std::optional<std::string> replace(size_t pops, Value v) {
    if (free_values() < pops) return "it pops more than it pushed";
    stack_.resize(stack_.size() - pops);
    stack_.push_back(std::move(v));
    return std::nullopt;
  }
  std::optional<std::string> number(size_t width) {
    const auto v = take(width);
    if (!v) return "it ends inside an integer";
    int64_t n = static_cast<int64_t>(*v);
    if (width == 4) n = static_cast<int32_t>(*v);  // BININT is signed
    stack_.push_back({Value::kInt, {}, n, nullptr});
    return std::nullopt;
  }
  std::optional<std::string> memo_put(size_t width) {
    const auto key = take(width);
    if (!key || stack_.empty()) return "it memoizes nothing";
    memo_[*key] = stack_.back();
    return std::nullopt;
  }
  std::optional<std::string> memo_get(size_t width) {
    const auto key = take(width);
    const auto it = key ? memo_.find(*key) : memo_.end();
    if (it == memo_.end()) return "it fetches a value it never memoized";
    stack_.push_back(it->second);
    return std::nullopt;
  }
  std::optional<std::string> tuple(size_t n) {
    if (free_values() < n) return "it pops more than it pushed";
    std::vector<Value> items(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return push_tuple(std::move(items));
  }
  std::optional<std::string> push_tuple(std::vector<Value> items) {
    int depth = 1;
    for (const auto& v : items) depth = std::max(depth, v.depth + 1);
    if (depth > core::kMaxNesting) return too_deep();
    stack_.push_back(
        {Value::kTuple, {}, 0, std::make_shared<std::vector<Value>>(std::move(items)), depth});
    return std::nullopt;
  }
  static std::string too_deep() {
    return fmt::format("it nests values deeper than {} levels", core::kMaxNesting);
  }
  // The value `pops` below the top takes in those above it (an append, a
  // setitem, a build, a reduce): they nest one level inside it.
  std::optional<std::string> take_in(size_t pops) {
    if (pops == 0 || free_values() < pops) return "it pops more than it pushed";
    int depth = stack_[stack_.size() - pops].depth;
    for (size_t i = stack_.size() - pops + 1; i < stack_.size(); ++i)
      depth = std::max(depth, stack_[i].depth + 1);
    stack_.resize(stack_.size() - pops);
    return push_other(depth);
  }
  std::optional<std::string> push_other(int depth) {
    if (depth > core::kMaxNesting) return too_deep();
    stack_.push_back({Value::kOther, {}, 0, nullptr, depth});
    return std::nullopt;
  }
  // Values above the mark into the container below it (appends, setitems).
  std::optional<std::string> fill_to_mark(size_t multiple, const char* odd) {
    std::vector<Value> items;
    if (auto why = pop_to_mark(&items, 1)) return why;
    if (items.size() % multiple != 0) return odd;
    int depth = stack_.back().depth;
    for (const auto& v : items) depth = std::max(depth, v.depth + 1);
    stack_.pop_back();
    return push_other(depth);
  }
  std::optional<std::string> global();
  std::optional<std::string> string();
  std::optional<std::string> tuple_to_mark();
  std::optional<std::string> persistent_id();
  std::optional<std::string> step(uint8_t op);
  std::optional<std::string> stack_op(uint8_t op);

  std::string_view b_;
  size_t at_ = 0;
  const std::map<std::string, uint64_t>& records_;
  std::string dir_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value> memo_;
};

// ('storage', torch.<T>Storage, key, location, numel): its record must hold
// exactly numel elements (libtorch sizes the storage by numel, whatever the
// record's length).
std::optional<std::string> Walk::persistent_id() {
  if (free_values() < 1) return "it pops more than it pushed";
  const Value id = stack_.back();
  const auto& t = id.items;
  if (id.kind != Value::kTuple || t->size() != 5 || (*t)[0].kind != Value::kStr ||
      (*t)[0].text != "storage" || (*t)[1].kind != Value::kGlobal || (*t)[2].kind != Value::kStr ||
      (*t)[4].kind != Value::kInt || (*t)[4].number < 0)
    return "a persistent id is not a storage";
  const int64_t size = element_size((*t)[1].text);
  if (size == 0) return "a storage is of an unknown type";
  const auto rec = records_.find(dir_ + (*t)[2].text);
  const uint64_t have = rec == records_.end() ? 0 : rec->second;
  const auto numel = static_cast<uint64_t>((*t)[4].number);
  if ((rec == records_.end() && numel > 0) || numel > have ||
      numel * static_cast<uint64_t>(size) != have)
    return fmt::format("storage '{}' does not hold the {} elements it claims",
                       core::escape_cut((*t)[2].text, 40), numel);
  return replace(1, {});
}

std::optional<std::string> Walk::global() {
  const auto module = line(), name = line();
  if (!module || !name) return "a global's name does not end";
  stack_.push_back({Value::kGlobal, *module + "." + *name, 0, nullptr});
  return std::nullopt;
}

std::optional<std::string> Walk::string() {
  const auto n = take(4);
  if (!n || *n > b_.size() - at_) return "a string is longer than what follows it";
  stack_.push_back({Value::kStr, std::string(b_.substr(at_, *n)), 0, nullptr});
  at_ += *n;
  return std::nullopt;
}

std::optional<std::string> Walk::tuple_to_mark() {
  std::vector<Value> items;
  if (auto why = pop_to_mark(&items, 0)) return why;
  return push_tuple(std::move(items));
}

// The opcodes followed by an argument.
std::optional<std::string> Walk::step(uint8_t op) {
  switch (op) {
    case 0x80:
      if (!take(1)) return "it ends in its header";
      return std::nullopt;
    case 'c':
      return global();
    case 'X':
      return string();
    case 'K':
      return number(1);
    case 'M':
      return number(2);
    case 'J':
      return number(4);
    case 0x8a: {
      const auto n = take(1);
      if (!n || *n > 8) return "a long integer is longer than 8 bytes";
      return number(*n);
    }
    case 'G':
      if (!take(8)) return "it ends inside a float";
      return replace(0, {});
    case 'q':
      return memo_put(1);
    case 'r':
      return memo_put(4);
    case 'h':
      return memo_get(1);
    case 'j':
      return memo_get(4);
    default:
      return stack_op(op);
  }
}

// The opcodes that only work on the stack.
std::optional<std::string> Walk::stack_op(uint8_t op) {
  switch (op) {
    case 'N':
    case 0x88:
    case 0x89:
    case ']':
    case '}':
      return replace(0, {});
    case ')':
      return tuple(0);
    case 0x85:
      return tuple(1);
    case 0x86:
      return tuple(2);
    case 0x87:
      return tuple(3);
    case '(':
      marks_.push_back(stack_.size());
      return std::nullopt;
    case 't':
      return tuple_to_mark();
    case 'e':
      return fill_to_mark(1, "");  // into the list below the mark
    case 'u':
      return fill_to_mark(2, "a dict gets a key without a value");
    case 'a':
      return take_in(2);
    case 's':
      return take_in(3);
    case 'R':
    case 0x81:
    case 'b':
      return take_in(2);
    case 'Q':
      return persistent_id();
    default:
      return "an opcode libtorch's pickler does not write";
  }
}

}  // namespace

std::optional<std::string> unexpected_pickle(std::string_view pickle,
                                             const std::map<std::string, uint64_t>& records,
                                             const std::string& record_dir) {
  return Walk(pickle, records, record_dir).run();
}

}  // namespace trainscope::checkpoint
