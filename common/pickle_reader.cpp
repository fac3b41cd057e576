// read_pickle(): a pickle's opcodes run on a stack machine that builds plain data and refuses anything that runs code.
#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "common/error.h"
#include "common/pickle.h"

namespace fsdpsim {
namespace {

// Longest LONG1/LONG4 integer read (as a real beyond 8 bytes): Python writes any int this way, and no field of a
// memory snapshot needs more than 2^64.
constexpr uint64_t kMaxLongBytes = 32;

constexpr const char* kCorruptPickle = "the pickle is corrupt: write it again";

// While reading, containers are shared nodes mutated in place: the memo holds references, as Python's does, so a
// container memoized when it was still empty and fetched again later (BINGET) is the filled one.
struct Node;
using NodePtr = std::shared_ptr<Node>;
struct Node {
  enum class Kind : uint8_t { scalar, list, dict } kind = Kind::scalar;
  PickleValue scalar;
  std::vector<NodePtr> items;  // list: the items; dict: key, value, key, value, ...
};

NodePtr scalar_node(PickleValue v) {
  auto n = std::make_shared<Node>();
  n->scalar = std::move(v);
  return n;
}

// Opcodes that import or call Python code, with their pickletools names, and data types fsdpsim does not take.
const char* refused_opcode(uint8_t op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    default:
      return nullptr;
  }
}

// The pickle's bytes and the position reading them: opcodes' arguments decoded, and errors that name the byte.
class PickleBytes {
 public:
  PickleBytes(const std::string& bytes, const std::string& source) : b_(bytes), source_(source) {}

  [[nodiscard]] size_t size() const { return b_.size(); }
  [[nodiscard]] size_t position() const { return pos_; }

  [[noreturn]] void fail_at(size_t at, const std::string& problem, const std::string& fix) const {
    throw ConfigError(SourceLocation{source_, 0, 0}, "pickle", "at byte " + std::to_string(at) + ": " + problem, fix);
  }

  uint8_t byte() {
    if (pos_ >= b_.size()) {
      fail_at(pos_, "the pickle ends before its STOP opcode (the file is truncated)", "write the file again");
    }
    return static_cast<uint8_t>(b_[pos_++]);
  }

  // A little-endian unsigned integer of `n` bytes.
  uint64_t fixed(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }

  std::string text(uint64_t length) {
    if (length > b_.size() - pos_) {
      fail_at(pos_, "a string of " + std::to_string(length) + " bytes runs past the end of the file",
              "write the file again (it is truncated or corrupt)");
    }
    std::string s = b_.substr(pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return s;
  }

  // An integer; one beyond 64 bits (PyTorch writes 2^64 - 1 as a frame's unknown line) reads as the nearest real,
  // so only fields that must be exact (sizes, addresses) refuse it, by their own type check.
  PickleValue long_int(size_t at, uint64_t length) {
    if (length > kMaxLongBytes) {
      fail_at(at, "an integer of " + std::to_string(length) + " bytes",
              "fsdpsim reads integers of up to " + std::to_string(kMaxLongBytes) + " bytes");
    }
    const std::string raw = text(length);
    if (raw.size() <= 8) {
      uint64_t v = 0;
      for (size_t i = 0; i < raw.size(); ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
      if (!raw.empty() && raw.size() < 8 && (static_cast<uint8_t>(raw.back()) & 0x80) != 0) {
        v |= ~uint64_t{0} << (8 * raw.size());  // sign-extend
      }
      return PickleValue{static_cast<int64_t>(v)};
    }
    const bool negative = (static_cast<uint8_t>(raw.back()) & 0x80) != 0;
    double magnitude = 0.0;  // of the two's complement value, most significant byte first
    for (size_t i = raw.size(); i-- > 0;) {
      const auto b = static_cast<uint8_t>(raw[i]);
      magnitude = magnitude * 256.0 + static_cast<double>(negative ? static_cast<uint8_t>(~b) : b);
    }
    return PickleValue{negative ? -(magnitude + 1.0) : magnitude};
  }

  double binary_double() {
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | byte();  // big-endian
    return std::bit_cast<double>(bits);
  }

 private:
  const std::string& b_;
  const std::string& source_;
  size_t pos_ = 0;
};

// The tree of one node; a value fetched from the memo twice is copied, so the copies count against the limits (a
// pickle whose shared references would expand past them, or that refers to itself, is refused).
PickleValue to_value(const Node& n, int32_t depth, int64_t& count, size_t at, const PickleBytes& in,
                     const PickleLimits& limits) {
  if (depth > limits.max_depth) {
    in.fail_at(
        at, "containers nested deeper than " + std::to_string(limits.max_depth) + " (or a container that holds itself)",
        "fsdpsim reads plain, acyclic data");
  }
  if (++count > limits.max_items)
    in.fail_at(at, "expands to more than " + std::to_string(limits.max_items) + " values", "record fewer steps");
  if (n.kind == Node::Kind::scalar) return n.scalar;
  if (n.kind == Node::Kind::list) {
    PickleList items;
    items.reserve(n.items.size());
    for (const NodePtr& item : n.items) items.push_back(to_value(*item, depth + 1, count, at, in, limits));
    return PickleValue{std::move(items)};
  }
  PickleDict entries;
  entries.reserve(n.items.size() / 2);
  for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
    entries.push_back(PickleEntry{to_value(*n.items[i], depth + 1, count, at, in, limits),
                                  to_value(*n.items[i + 1], depth + 1, count, at, in, limits)});
  }
  return PickleValue{std::move(entries)};
}

// The stack machine: each opcode group in its own function, each returning whether the opcode was one of its group.
class Reader {
 public:
  Reader(const std::string& bytes, const std::string& source, const PickleLimits& limits)
      : in_(bytes, source), limits_(limits) {}
  // A container that holds itself (through the memo) is a cycle of shared pointers: empty every container so that
  // all of them are freed, whatever the pickle did.
  ~Reader() {
    for (const NodePtr& n : containers_) n->items.clear();
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  PickleValue read() {
    if (static_cast<int64_t>(in_.size()) > limits_.max_bytes) {
      in_.fail_at(0,
                  "the file has " + std::to_string(in_.size()) + " bytes, more than the " +
                      std::to_string(limits_.max_bytes) + " fsdpsim reads",
                  "record fewer steps (a shorter allocation history) or split the snapshot");
    }
    for (;;) {
      const size_t at = in_.position();
      const uint8_t op = in_.byte();
      if (const char* name = refused_opcode(op)) {
        in_.fail_at(at,
                    std::string("opcode ") + name +
                        " would import or call Python code; fsdpsim reads only plain data (dicts, lists, strings, "
                        "numbers)",
                    "write the snapshot with torch.cuda.memory._dump_snapshot, which pickles plain data only");
      }
      if (op == '.') return finish(at);  // STOP
      if (read_framing(op) || read_scalar(at, op) || read_container(at, op) || read_memo(at, op) ||
          read_stack(at, op)) {
        continue;
      }
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      in_.fail_at(at, std::string("opcode ") + hex + " is not one fsdpsim reads (plain data of protocols 2-5 only)",
                  "write the snapshot with pickle protocol 2 or later");
    }
  }

 private:
  // PROTO and FRAME: skipped, as they say nothing about the data.
  bool read_framing(uint8_t op) {
    switch (op) {
      case 0x80:
        (void)in_.byte();
        return true;  // PROTO
      case 0x95:
        (void)in_.fixed(8);
        return true;  // FRAME: the length of the next frame, informative
      default:
        return false;
    }
  }

  // None, booleans, integers, floats and strings (bytes read as strings).
  bool read_scalar(size_t at, uint8_t op) {
    switch (op) {
      case 'N':
        push(scalar_node(PickleValue{}));
        return true;
      case 0x88:
        push(scalar_node(PickleValue{true}));
        return true;
      case 0x89:
        push(scalar_node(PickleValue{false}));
        return true;
      case 'J':
        push(scalar_node(PickleValue{static_cast<int64_t>(static_cast<int32_t>(in_.fixed(4)))}));
        return true;
      case 'K':
        push(scalar_node(PickleValue{static_cast<int64_t>(in_.fixed(1))}));
        return true;
      case 'M':
        push(scalar_node(PickleValue{static_cast<int64_t>(in_.fixed(2))}));
        return true;
      case 0x8a:
        push(scalar_node(in_.long_int(at, in_.fixed(1))));
        return true;  // LONG1
      case 0x8b:
        push(scalar_node(in_.long_int(at, in_.fixed(4))));
        return true;  // LONG4
      case 'G':
        push(scalar_node(PickleValue{in_.binary_double()}));
        return true;  // BINFLOAT
      case 'X':
      case 'B':
      case 'T':
        push(scalar_node(PickleValue{in_.text(in_.fixed(4))}));
        return true;
      case 0x8c:
      case 'C':
      case 'U':
        push(scalar_node(PickleValue{in_.text(in_.fixed(1))}));
        return true;
      case 0x8d:
      case 0x8e:
        push(scalar_node(PickleValue{in_.text(in_.fixed(8))}));
        return true;
      default:
        return false;
    }
  }

  // Lists, tuples (read as lists) and dicts: made empty, from the stack down to a MARK, or filled in place.
  bool read_container(size_t at, uint8_t op) {
    switch (op) {
      case '}':
        push(container(Node::Kind::dict));
        return true;
      case ']':
      case ')':
        push(container(Node::Kind::list));
        return true;
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case 't':
      case 'l':
        push(collect(at, Node::Kind::list));
        return true;  // TUPLE, LIST
      case 'd':
        push(collect(at, Node::Kind::dict));
        return true;  // DICT
      case 0x85:
      case 0x86:
      case 0x87:
        push(small_tuple(at, op - 0x84));
        return true;
      case 'a':
        append(at, 1);
        return true;  // APPEND
      case 'e':
        append(at, take_mark(at));
        return true;  // APPENDS
      case 's':
        set_items(at, 2);
        return true;  // SETITEM
      case 'u':
        set_items(at, take_mark(at));
        return true;  // SETITEMS
      default:
        return false;
    }
  }

  // The memo: values stored under a key and fetched again (shared references).
  bool read_memo(size_t at, uint8_t op) {
    switch (op) {
      case 'q':
        memo_[in_.fixed(1)] = top(at);
        return true;  // BINPUT
      case 'r':
        memo_[in_.fixed(4)] = top(at);
        return true;  // LONG_BINPUT
      case 0x94:
        memo_[static_cast<uint64_t>(memo_.size())] = top(at);
        return true;  // MEMOIZE
      case 'h':
        push(memo(at, in_.fixed(1)));
        return true;  // BINGET
      case 'j':
        push(memo(at, in_.fixed(4)));
        return true;  // LONG_BINGET
      default:
        return false;
    }
  }

  // POP, POP_MARK and DUP.
  bool read_stack(size_t at, uint8_t op) {
    switch (op) {
      case '0':
        (void)pop(at);
        return true;  // POP
      case '1':
        stack_.resize(stack_.size() - take_mark(at));
        return true;  // POP_MARK
      case '2':
        push(top(at));
        return true;  // DUP
      default:
        return false;
    }
  }

  NodePtr container(Node::Kind kind) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    containers_.push_back(n);
    return n;
  }

  void push(NodePtr n) {
    if (++items_ > limits_.max_items) {
      in_.fail_at(in_.position(), "more than " + std::to_string(limits_.max_items) + " values", "record fewer steps");
    }
    stack_.push_back(std::move(n));
  }

  NodePtr pop(size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) in_.fail_at(at, "pops an empty stack", kCorruptPickle);
    NodePtr n = std::move(stack_.back());
    stack_.pop_back();
    return n;
  }

  NodePtr top(size_t at) const {
    if (stack_.empty()) in_.fail_at(at, "reads an empty stack", kCorruptPickle);
    return stack_.back();
  }

  size_t take_mark(size_t at) {
    if (marks_.empty()) in_.fail_at(at, "has no MARK to pop to", kCorruptPickle);
    const size_t mark = marks_.back();
    marks_.pop_back();
    // APPEND, SETITEM and the small tuples pop without looking at marks: the stack may now be below this one.
    if (mark > stack_.size()) in_.fail_at(at, "pops below a MARK", kCorruptPickle);
    return stack_.size() - mark;
  }

  NodePtr collect(size_t at, Node::Kind kind) {
    const size_t count = take_mark(at);
    if (kind == Node::Kind::dict && count % 2 != 0) in_.fail_at(at, "a dict with a key and no value", kCorruptPickle);
    NodePtr n = container(kind);
    n->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
    return n;
  }

  NodePtr small_tuple(size_t at, int count) {
    if (stack_.size() < static_cast<size_t>(count) + (marks_.empty() ? 0 : marks_.back())) {
      in_.fail_at(at, "a tuple of " + std::to_string(count) + " from a shorter stack", kCorruptPickle);
    }
    NodePtr n = container(Node::Kind::list);
    n->items.assign(stack_.end() - count, stack_.end());
    stack_.resize(stack_.size() - static_cast<size_t>(count));
    return n;
  }

  // Appends the top `count` values to the list under them (APPEND: 1; APPENDS: down to the mark).
  void append(size_t at, size_t count) {
    if (stack_.size() < count + 1) in_.fail_at(at, "appends to nothing", kCorruptPickle);
    Node& list = *stack_[stack_.size() - count - 1];
    if (list.kind != Node::Kind::list) in_.fail_at(at, "appends to something that is not a list", kCorruptPickle);
    list.items.insert(list.items.end(), stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
  }

  void set_items(size_t at, size_t count) {
    if (count % 2 != 0 || stack_.size() < count + 1) in_.fail_at(at, "sets a key without a value", kCorruptPickle);
    Node& dict = *stack_[stack_.size() - count - 1];
    if (dict.kind != Node::Kind::dict) in_.fail_at(at, "sets an item of something that is not a dict", kCorruptPickle);
    dict.items.insert(dict.items.end(), stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
  }

  NodePtr memo(size_t at, uint64_t key) const {
    const auto it = memo_.find(key);
    if (it == memo_.end())
      in_.fail_at(at, "fetches memo entry " + std::to_string(key) + ", which was never stored", kCorruptPickle);
    return it->second;
  }

  PickleValue finish(size_t at) {
    if (stack_.size() != 1 || !marks_.empty())
      in_.fail_at(at, "STOP with " + std::to_string(stack_.size()) + " values", kCorruptPickle);
    int64_t count = 0;
    return to_value(*stack_.back(), 0, count, at, in_, limits_);
  }

  PickleBytes in_;
  const PickleLimits& limits_;
  int64_t items_ = 0;
  std::vector<NodePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, NodePtr> memo_;
  std::vector<NodePtr> containers_;
};

}  // namespace

PickleValue read_pickle(const std::string& bytes, const std::string& source, const PickleLimits& limits) {
  return Reader(bytes, source, limits).read();
}

}  // namespace fsdpsim
