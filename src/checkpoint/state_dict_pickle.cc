// The pickle torch.save writes for a state dict, read by a small machine of
// our own (state_dict_pickle.h): libtorch's unpickler (torch::pickle_load)
// refuses Python's collections.OrderedDict when its class is fetched again
// from the memo, which every state dict does for each tensor's hooks.
#include "state_dict_pickle.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

#include "trainscope/core/util.h"

namespace trainscope::checkpoint {

// Named, not anonymous: a unity batch shares anonymous namespaces.
namespace unpickling {

struct Value;
// Values point at each other without owning: the machine's arena holds them
// all, so that a pickle whose memo makes a cycle (a dict holding itself)
// frees like any other.
using Ptr = Value*;

// A value of the pickle machine, as much as a state dict needs.
struct Value {
  enum Kind { kNone, kBool, kInt, kFloat, kStr, kTuple, kDict, kGlobal, kStorage, kTensor } kind;
  int64_t i = 0;
  double f = 0;
  std::string s;            // a str; "module.name" of a global; a storage's key
  std::vector<Ptr> items;   // a tuple; a dict's keys and values, alternating
  torch::ScalarType dtype;  // a storage's
  torch::Tensor tensor;
};

struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A name from the file, as a message may show it: printable, 80 bytes at most.
std::string display(std::string_view s) {
  return core::escape_for_display(s.substr(0, std::min<size_t>(s.size(), 80)));
}

// The legacy storage classes Python names in a storage's persistent id.
torch::ScalarType storage_dtype(const std::string& global) {
  static const std::map<std::string, torch::ScalarType> kTypes = {
      {"torch.FloatStorage", torch::kFloat32}, {"torch.DoubleStorage", torch::kFloat64},
      {"torch.HalfStorage", torch::kFloat16},  {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.LongStorage", torch::kInt64},    {"torch.IntStorage", torch::kInt32},
      {"torch.ShortStorage", torch::kInt16},   {"torch.CharStorage", torch::kInt8},
      {"torch.ByteStorage", torch::kUInt8},    {"torch.BoolStorage", torch::kBool}};
  auto it = kTypes.find(global);
  if (it == kTypes.end()) throw Bad("it holds a storage of type " + display(global));
  return it->second;
}

class Machine {
 public:
  Machine(std::string_view pickle, StorageReader read) : p_(pickle), read_(std::move(read)) {}

  Ptr make(Value::Kind k) {
    if (arena_.size() > (1u << 22)) throw Bad("its pickle makes more values than a state dict");
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = k;
    return arena_.back().get();
  }

  Ptr run() {
    while (at_ < p_.size())
      if (step(static_cast<unsigned char>(p_[at_++]))) {
        if (stack_.size() != 1 || !marks_.empty()) throw Bad("its pickle ends mid-value");
        return stack_.back();
      }
    throw Bad("its pickle has no end");
  }

 private:
  uint64_t uint(size_t n) {
    if (p_.size() - at_ < n) throw Bad("its pickle is cut short");
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(p_[at_ + k])) << (8 * k);
    at_ += n;
    return v;
  }
  std::string bytes(size_t n) {
    if (p_.size() - at_ < n) throw Bad("its pickle is cut short");
    std::string s(p_.substr(at_, n));
    at_ += n;
    return s;
  }
  std::string line() {
    const size_t end = p_.find('\n', at_);
    if (end == std::string_view::npos || end - at_ > 256)
      throw Bad("its pickle names a global badly");
    std::string s(p_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }
  Ptr pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
      throw Bad("its pickle takes a value that is not there");
    Ptr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<Ptr> pop_mark() {
    if (marks_.empty()) throw Bad("its pickle closes a mark it never set");
    std::vector<Ptr> out(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return out;
  }
  void push(Ptr v) {
    if (stack_.size() > (1u << 20)) throw Bad("its pickle is deeper than a state dict");
    stack_.push_back(std::move(v));
  }
  Ptr scalar(Value::Kind k, int64_t i) {
    auto v = make(k);
    v->i = i;
    return v;
  }
  Ptr tuple(std::vector<Ptr> items) {
    auto v = make(Value::kTuple);
    v->items = std::move(items);
    return v;
  }
  void memo_put(uint64_t k) {
    if (stack_.empty() || k > (1u << 24)) throw Bad("its pickle memoizes nothing");
    memo_[k] = stack_.back();
  }
  Ptr memo_get(uint64_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) throw Bad("its pickle fetches a value it never stored");
    return it->second;
  }
  bool step(unsigned char op);
  bool step_values(unsigned char op);
  void set_items(const std::vector<Ptr>& kv);
  Ptr reduce(const Value& callable, const Value& args);
  Ptr persistent(const Value& pid);
  Ptr rebuild_tensor(const std::vector<Ptr>& a);
  const torch::Tensor& storage(const Value& s);

  std::string_view p_;
  StorageReader read_;
  size_t at_ = 0;
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Ptr> memo_;
  std::map<std::string, torch::Tensor> storages_;
  int64_t budget_ = 0;  // elements rebuild_tensor may still copy
};

// Opcodes that build values (true at STOP).
bool Machine::step(unsigned char op) {
  switch (op) {
    case 0x80:
      uint(1);
      return false;  // PROTO
    case '.':
      return true;  // STOP
    case '(':
      marks_.push_back(stack_.size());
      return false;
    case 'q':
      memo_put(uint(1));
      return false;
    case 'r':
      memo_put(uint(4));
      return false;
    case 'h':
      push(memo_get(uint(1)));
      return false;
    case 'j':
      push(memo_get(uint(4)));
      return false;
    case 'c': {
      auto g = make(Value::kGlobal);
      g->s = line();
      g->s += "." + line();
      push(g);
      return false;
    }
    case 'Q':
      push(persistent(*pop()));
      return false;
    case 'R': {
      Ptr args = pop(), callable = pop();
      push(reduce(*callable, *args));
      return false;
    }
    case 'b': {  // BUILD: a state dict's _metadata (versions of its modules), not kept
      pop();
      if (stack_.empty() || stack_.back()->kind != Value::kDict)
        throw Bad("it sets the state of a non-dict");
      return false;
    }
    case 's': {  // SETITEM
      Ptr v = pop(), k = pop();
      set_items({k, v});
      return false;
    }
    case 'u':
      set_items(pop_mark());
      return false;  // SETITEMS
    default:
      return step_values(op);
  }
}

// Opcodes that push one plain value.
bool Machine::step_values(unsigned char op) {
  switch (op) {
    case 'N':
      push(make(Value::kNone));
      return false;
    case 0x88:
    case 0x89:
      push(scalar(Value::kBool, op == 0x88));
      return false;
    case 'K':
      push(scalar(Value::kInt, static_cast<int64_t>(uint(1))));
      return false;
    case 'M':
      push(scalar(Value::kInt, static_cast<int64_t>(uint(2))));
      return false;
    case 'J':
      push(scalar(Value::kInt, static_cast<int32_t>(uint(4))));
      return false;
    case 0x8a: {  // LONG1: little-endian two's complement of n <= 8 bytes
      const size_t n = uint(1);
      if (n > 8) throw Bad("it holds an integer wider than 64 bits");
      uint64_t v = n ? uint(n) : 0;
      if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
      push(scalar(Value::kInt, static_cast<int64_t>(v)));
      return false;
    }
    case 'G': {
      uint64_t bits = 0;
      for (unsigned char c : bytes(8)) bits = (bits << 8) | c;  // big-endian
      auto v = make(Value::kFloat);
      std::memcpy(&v->f, &bits, sizeof bits);
      push(v);
      return false;
    }
    case 'X':
    case 0x8c: {
      auto v = make(Value::kStr);
      v->s = bytes(uint(op == 'X' ? 4 : 1));
      push(v);
      return false;
    }
    case ')':
      push(tuple({}));
      return false;
    case '}':
      push(make(Value::kDict));
      return false;
    case 't':
      push(tuple(pop_mark()));
      return false;
    case 0x85:
    case 0x86:
    case 0x87: {
      std::vector<Ptr> items(op - 0x84);
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      push(tuple(std::move(items)));
      return false;
    }
    default:
      throw Bad(fmt::format("its pickle uses opcode 0x{:02x}, which a state dict does not", op));
  }
}

// SETITEM(S) onto the dict below (the mark's, already taken off).
void Machine::set_items(const std::vector<Ptr>& kv) {
  if (kv.size() % 2) throw Bad("it sets a key without a value");
  if (stack_.empty() || stack_.back()->kind != Value::kDict)
    throw Bad("it sets items of a non-dict");
  auto& items = stack_.back()->items;
  items.insert(items.end(), kv.begin(), kv.end());
}

Ptr Machine::persistent(const Value& pid) {
  const auto& a = pid.items;
  if (pid.kind != Value::kTuple || a.size() != 5 || a[0]->kind != Value::kStr ||
      a[0]->s != "storage" || a[1]->kind != Value::kGlobal || a[2]->kind != Value::kStr ||
      a[4]->kind != Value::kInt || a[4]->i < 0)
    throw Bad("it refers to an object outside its pickle that is not a tensor's storage");
  auto s = make(Value::kStorage);
  s->dtype = storage_dtype(a[1]->s);
  s->s = a[2]->s;
  s->i = a[4]->i;  // elements
  return s;
}

Ptr Machine::reduce(const Value& callable, const Value& args) {
  if (callable.kind != Value::kGlobal || args.kind != Value::kTuple)
    throw Bad("its pickle calls something that is not a global");
  if (callable.s == "collections.OrderedDict" && args.items.empty()) return make(Value::kDict);
  if (callable.s == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(args.items);
  if (callable.s == "torch._utils._rebuild_parameter" && !args.items.empty() &&
      args.items[0]->kind == Value::kTensor)
    return args.items[0];
  throw Bad("it calls " + display(callable.s) + ", which a state dict does not");
}

std::vector<int64_t> ints(const Value& t) {
  if (t.kind != Value::kTuple) throw Bad("a tensor's shape is not a tuple");
  std::vector<int64_t> out;
  for (const auto& x : t.items) {
    if (x->kind != Value::kInt || x->i < 0) throw Bad("a tensor's shape is not sizes");
    out.push_back(x->i);
  }
  return out;
}

// The farthest element a view (offset, size, stride) addresses and how many
// elements it has; nullopt when either overflows 64 bits. last is -1 for an
// empty view.
std::optional<std::pair<int64_t, int64_t>> extent(int64_t offset, const std::vector<int64_t>& size,
                                                  const std::vector<int64_t>& stride) {
  int64_t last = offset, numel = 1, step = 0;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) return std::make_pair(int64_t{-1}, int64_t{0});
    if (__builtin_mul_overflow(size[d] - 1, stride[d], &step) ||
        __builtin_add_overflow(last, step, &last) || __builtin_mul_overflow(numel, size[d], &numel))
      return std::nullopt;
  }
  return std::make_pair(last, numel);
}

// A storage's tensor, read once (a second mention must agree with the first).
const torch::Tensor& Machine::storage(const Value& s) {
  auto it = storages_.find(s.s);
  if (it != storages_.end()) {
    if (it->second.scalar_type() != s.dtype || it->second.numel() != s.i)
      throw Bad("storage '" + display(s.s) + "' is named with two types or sizes");
    return it->second;
  }
  const auto element = static_cast<int64_t>(c10::elementSize(s.dtype));
  if (s.i > (int64_t{1} << 40) / element) throw Bad("a storage is too large");
  const std::string bytes = read_(s.s, static_cast<size_t>(s.i * element));
  if (static_cast<int64_t>(bytes.size()) != s.i * element)
    throw Bad("storage '" + display(s.s) + "' does not hold the elements it claims");
  auto t = torch::empty({s.i}, torch::TensorOptions().dtype(s.dtype));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  budget_ += 2 * s.i + (1 << 20);  // the copies a state dict may make of what it holds
  return storages_.emplace(s.s, t).first->second;
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]):
// a copy of a view of the storage, every element it addresses inside it; all
// copies together at most twice the elements of the storages read (a stride
// of 0 or the memo's repeats cannot make a small file fill the memory).
Ptr Machine::rebuild_tensor(const std::vector<Ptr>& a) {
  if (a.size() < 4 || a[0]->kind != Value::kStorage || a[1]->kind != Value::kInt || a[1]->i < 0)
    throw Bad("it rebuilds a tensor from something that is not a storage");
  const Value& s = *a[0];
  const auto size = ints(*a[2]), stride = ints(*a[3]);
  if (size.size() != stride.size() || size.size() > 16)
    throw Bad("a tensor's shape and strides differ");
  const auto e = extent(a[1]->i, size, stride);
  if (!e || a[1]->i > s.i || e->first >= s.i)
    throw Bad("a tensor addresses memory outside its storage");
  const torch::Tensor& from = storage(s);
  if (e->second > budget_) throw Bad("its tensors hold more elements than its storages");
  budget_ -= e->second;
  auto v = make(Value::kTensor);
  try {
    v->tensor = from.as_strided(size, stride, a[1]->i).clone();
  } catch (const c10::Error& err) {  // a check of libtorch's that ours missed: still one line
    throw Bad(std::string("libtorch refused a tensor: ") + display(err.what_without_backtrace()));
  }
  return v;
}

}  // namespace unpickling

std::vector<std::pair<std::string, torch::Tensor>> unpickle_state_dict(std::string_view pickle,
                                                                       StorageReader read) {
  using unpickling::Bad, unpickling::Machine, unpickling::Ptr, unpickling::Value;
  Machine machine(pickle, std::move(read));  // owns every value until the end
  Ptr top = nullptr;
  try {
    top = machine.run();
  } catch (const Bad& e) {
    throw std::runtime_error(e.what());
  }
  if (top->kind != Value::kDict)
    throw std::runtime_error("it holds one value, not tensors by name");
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t k = 0; k + 1 < top->items.size(); k += 2) {
    const Value &key = *top->items[k], &value = *top->items[k + 1];
    if (key.kind != Value::kStr || value.kind != Value::kTensor)
      throw std::runtime_error("it maps something other than names to tensors");
    out.emplace_back(key.s, value.tensor);
  }
  return out;
}

namespace unpickling {

// Python's pickle of protocol 2, as torch.save writes a state dict.
class Writer {
 public:
  void op(char c) { out_ += c; }
  void text(const std::string& s) {  // BINUNICODE
    op('X');
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void global(const std::string& module, const std::string& name) {
    op('c');
    out_ += module + "\n" + name + "\n";
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      u32(static_cast<uint32_t>(static_cast<int32_t>(v)));
      return;
    }
    op('\x8a');
    out_ += '\x08';
    for (int k = 0; k < 8; ++k) out_ += static_cast<char>(static_cast<uint64_t>(v) >> (8 * k));
  }
  void ints(at::IntArrayRef v) {
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
  std::string done() { return out_ + "."; }

 private:
  void u32(uint32_t v) {
    for (int k = 0; k < 4; ++k) out_ += static_cast<char>(v >> (8 * k));
  }
  std::string out_ = "\x80\x02";
};

std::string storage_class(torch::ScalarType t) {
  for (const char* name :
       {"FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage",
        "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage"})
    if (storage_dtype(std::string("torch.") + name) == t) return name;
  throw std::runtime_error(std::string("no PyTorch storage holds ") + c10::toString(t));
}

}  // namespace unpickling

std::string pickle_state_dict(const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  unpickling::Writer w;
  w.empty_ordered_dict();
  w.op('(');
  for (size_t k = 0; k < tensors.size(); ++k) {
    const torch::Tensor& t = tensors[k].second;
    w.text(tensors[k].first);
    w.global("torch._utils", "_rebuild_tensor_v2");
    w.op('(');
    w.op('(');  // the persistent id of storage k: ('storage', class, key, 'cpu', elements)
    w.text("storage");
    w.global("torch", unpickling::storage_class(t.scalar_type()));
    w.text(std::to_string(k));
    w.text("cpu");
    w.integer(t.numel());
    w.op('t');
    w.op('Q');
    w.integer(0);  // offset
    w.ints(t.sizes());
    w.ints(t.strides());
    w.op('\x89');            // requires_grad False
    w.empty_ordered_dict();  // backward hooks
    w.op('t');
    w.op('R');
  }
  w.op('u');
  return w.done();
}

}  // namespace trainscope::checkpoint
