#include "common/pickle.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "common/error.h"

namespace fsdpsim {
namespace {

// Longest LONG1/LONG4 integer read (as a real beyond 8 bytes): Python writes any int this way, and no field of a
// memory snapshot needs more than 2^64.
constexpr uint64_t kMaxLongBytes = 32;

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

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& source, const PickleLimits& limits)
      : b_(bytes), source_(source), limits_(limits) {}
  // A container that holds itself (through the memo) is a cycle of shared pointers: empty every container so that
  // all of them are freed, whatever the pickle did.
  ~Reader() {
    for (const NodePtr& n : containers_) n->items.clear();
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  PickleValue read() {
    if (static_cast<int64_t>(b_.size()) > limits_.max_bytes) {
      fail_at(0,
              "the file has " + std::to_string(b_.size()) + " bytes, more than the " +
                  std::to_string(limits_.max_bytes) + " fsdpsim reads",
              "record fewer steps (a shorter allocation history) or split the snapshot");
    }
    for (;;) {
      const size_t at = pos_;
      const uint8_t op = byte();
      if (const char* name = refused_opcode(op)) {
        fail_at(at,
                std::string("opcode ") + name +
                    " would import or call Python code; fsdpsim reads only plain data (dicts, lists, strings, "
                    "numbers)",
                "write the snapshot with torch.cuda.memory._dump_snapshot, which pickles plain data only");
      }
      switch (op) {
        case 0x80:
          (void)byte();
          break;  // PROTO
        case 0x95:
          (void)fixed(8);
          break;  // FRAME: the length of the next frame, informative
        case '.':
          return finish(at);  // STOP
        case 'N':
          push(scalar_node(PickleValue{}));
          break;
        case 0x88:
          push(scalar_node(PickleValue{true}));
          break;
        case 0x89:
          push(scalar_node(PickleValue{false}));
          break;
        case 'J':
          push(scalar_node(PickleValue{static_cast<int64_t>(static_cast<int32_t>(fixed(4)))}));
          break;
        case 'K':
          push(scalar_node(PickleValue{static_cast<int64_t>(fixed(1))}));
          break;
        case 'M':
          push(scalar_node(PickleValue{static_cast<int64_t>(fixed(2))}));
          break;
        case 0x8a:
          push(scalar_node(long_int(at, fixed(1))));
          break;  // LONG1
        case 0x8b:
          push(scalar_node(long_int(at, fixed(4))));
          break;  // LONG4
        case 'G':
          push(scalar_node(PickleValue{binary_double()}));
          break;  // BINFLOAT
        case 'X':
        case 'B':
        case 'T':
          push(scalar_node(PickleValue{text(fixed(4))}));
          break;
        case 0x8c:
        case 'C':
        case 'U':
          push(scalar_node(PickleValue{text(fixed(1))}));
          break;
        case 0x8d:
        case 0x8e:
          push(scalar_node(PickleValue{text(fixed(8))}));
          break;
        case '}':
          push(container(Node::Kind::dict));
          break;
        case ']':
        case ')':
          push(container(Node::Kind::list));
          break;
        case '(':
          marks_.push_back(stack_.size());
          break;
        case 't':
        case 'l':
          push(collect(at, Node::Kind::list));
          break;  // TUPLE, LIST
        case 'd':
          push(collect(at, Node::Kind::dict));
          break;  // DICT
        case 0x85:
        case 0x86:
        case 0x87:
          push(small_tuple(at, op - 0x84));
          break;
        case 'a':
          append(at, 1);
          break;  // APPEND
        case 'e':
          append(at, take_mark(at));
          break;  // APPENDS
        case 's':
          set_items(at, 2);
          break;  // SETITEM
        case 'u':
          set_items(at, take_mark(at));
          break;  // SETITEMS
        case 'q':
          memo_[fixed(1)] = top(at);
          break;  // BINPUT
        case 'r':
          memo_[fixed(4)] = top(at);
          break;  // LONG_BINPUT
        case 0x94:
          memo_[static_cast<uint64_t>(memo_.size())] = top(at);
          break;  // MEMOIZE
        case 'h':
          push(memo(at, fixed(1)));
          break;  // BINGET
        case 'j':
          push(memo(at, fixed(4)));
          break;  // LONG_BINGET
        case '0':
          (void)pop(at);
          break;  // POP
        case '1':
          stack_.resize(stack_.size() - take_mark(at));
          break;  // POP_MARK
        case '2':
          push(top(at));
          break;  // DUP
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail_at(at, std::string("opcode ") + hex + " is not one fsdpsim reads (plain data of protocols 2-5 only)",
                  "write the snapshot with pickle protocol 2 or later");
        }
      }
    }
  }

 private:
  NodePtr container(Node::Kind kind) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    containers_.push_back(n);
    return n;
  }

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

  void push(NodePtr n) {
    if (++items_ > limits_.max_items) {
      fail_at(pos_, "more than " + std::to_string(limits_.max_items) + " values", "record fewer steps");
    }
    stack_.push_back(std::move(n));
  }

  NodePtr pop(size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail_at(at, "pops an empty stack", kCorrupt);
    NodePtr n = std::move(stack_.back());
    stack_.pop_back();
    return n;
  }

  NodePtr top(size_t at) const {
    if (stack_.empty()) fail_at(at, "reads an empty stack", kCorrupt);
    return stack_.back();
  }

  size_t take_mark(size_t at) {
    if (marks_.empty()) fail_at(at, "has no MARK to pop to", kCorrupt);
    const size_t mark = marks_.back();
    marks_.pop_back();
    // APPEND, SETITEM and the small tuples pop without looking at marks: the stack may now be below this one.
    if (mark > stack_.size()) fail_at(at, "pops below a MARK", kCorrupt);
    return stack_.size() - mark;
  }

  NodePtr collect(size_t at, Node::Kind kind) {
    const size_t count = take_mark(at);
    if (kind == Node::Kind::dict && count % 2 != 0) fail_at(at, "a dict with a key and no value", kCorrupt);
    NodePtr n = container(kind);
    n->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
    return n;
  }

  NodePtr small_tuple(size_t at, int count) {
    if (stack_.size() < static_cast<size_t>(count) + (marks_.empty() ? 0 : marks_.back())) {
      fail_at(at, "a tuple of " + std::to_string(count) + " from a shorter stack", kCorrupt);
    }
    NodePtr n = container(Node::Kind::list);
    n->items.assign(stack_.end() - count, stack_.end());
    stack_.resize(stack_.size() - static_cast<size_t>(count));
    return n;
  }

  // Appends the top `count` values to the list under them (APPEND: 1; APPENDS: down to the mark).
  void append(size_t at, size_t count) {
    if (stack_.size() < count + 1) fail_at(at, "appends to nothing", kCorrupt);
    Node& list = *stack_[stack_.size() - count - 1];
    if (list.kind != Node::Kind::list) fail_at(at, "appends to something that is not a list", kCorrupt);
    list.items.insert(list.items.end(), stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
  }

  void set_items(size_t at, size_t count) {
    if (count % 2 != 0 || stack_.size() < count + 1) fail_at(at, "sets a key without a value", kCorrupt);
    Node& dict = *stack_[stack_.size() - count - 1];
    if (dict.kind != Node::Kind::dict) fail_at(at, "sets an item of something that is not a dict", kCorrupt);
    dict.items.insert(dict.items.end(), stack_.end() - static_cast<std::ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
  }

  NodePtr memo(size_t at, uint64_t key) const {
    const auto it = memo_.find(key);
    if (it == memo_.end())
      fail_at(at, "fetches memo entry " + std::to_string(key) + ", which was never stored", kCorrupt);
    return it->second;
  }

  PickleValue finish(size_t at) {
    if (stack_.size() != 1 || !marks_.empty())
      fail_at(at, "STOP with " + std::to_string(stack_.size()) + " values", kCorrupt);
    int64_t count = 0;
    return to_value(*stack_.back(), 0, count, at);
  }

  // The tree of one node; a value fetched from the memo twice is copied, so the copies count against the limits (a
  // pickle whose shared references would expand past them, or that refers to itself, is refused).
  PickleValue to_value(const Node& n, int32_t depth, int64_t& count, size_t at) const {
    if (depth > limits_.max_depth) {
      fail_at(
          at,
          "containers nested deeper than " + std::to_string(limits_.max_depth) + " (or a container that holds itself)",
          "fsdpsim reads plain, acyclic data");
    }
    if (++count > limits_.max_items)
      fail_at(at, "expands to more than " + std::to_string(limits_.max_items) + " values", "record fewer steps");
    if (n.kind == Node::Kind::scalar) return n.scalar;
    if (n.kind == Node::Kind::list) {
      PickleList items;
      items.reserve(n.items.size());
      for (const NodePtr& item : n.items) items.push_back(to_value(*item, depth + 1, count, at));
      return PickleValue{std::move(items)};
    }
    PickleDict entries;
    entries.reserve(n.items.size() / 2);
    for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
      entries.push_back(
          PickleEntry{to_value(*n.items[i], depth + 1, count, at), to_value(*n.items[i + 1], depth + 1, count, at)});
    }
    return PickleValue{std::move(entries)};
  }

  static constexpr const char* kCorrupt = "the pickle is corrupt: write it again";
  const std::string& b_;
  const std::string& source_;
  const PickleLimits& limits_;
  size_t pos_ = 0;
  int64_t items_ = 0;
  std::vector<NodePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, NodePtr> memo_;
  std::vector<NodePtr> containers_;
};

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void write_value(const PickleValue& v, std::string& out) {
  if (v.is_none()) {
    out.push_back('N');
  } else if (const bool* b = std::get_if<bool>(&v.value)) {
    out.push_back(static_cast<char>(*b ? 0x88 : 0x89));
  } else if (const int64_t* i = v.integer()) {
    if (*i >= 0 && *i < 256) {
      out.push_back('K');
      out.push_back(static_cast<char>(*i));
    } else if (*i >= 0 && *i < 65536) {
      out.push_back('M');
      out.push_back(static_cast<char>(*i & 0xFF));
      out.push_back(static_cast<char>((*i >> 8) & 0xFF));
    } else if (*i >= INT32_MIN && *i <= INT32_MAX) {
      out.push_back('J');
      put_u32(out, static_cast<uint32_t>(static_cast<int32_t>(*i)));
    } else {
      // LONG1: the shortest little-endian two's complement that keeps the sign.
      std::string bytes;
      int64_t x = *i;
      for (;;) {
        bytes.push_back(static_cast<char>(x & 0xFF));
        const bool sign = (x & 0x80) != 0;
        x >>= 8;  // arithmetic
        if ((x == 0 && !sign) || (x == -1 && sign)) break;
      }
      out.push_back(static_cast<char>(0x8a));
      out.push_back(static_cast<char>(bytes.size()));
      out += bytes;
    }
  } else if (const double* d = v.real()) {
    out.push_back('G');
    const auto bits = std::bit_cast<uint64_t>(*d);
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((bits >> s) & 0xFF));
  } else if (const std::string* s = v.string()) {
    out.push_back('X');
    put_u32(out, static_cast<uint32_t>(s->size()));
    out += *s;
  } else if (const PickleList* l = v.list()) {
    out.push_back(']');
    if (l->empty()) return;
    out.push_back('(');
    for (const PickleValue& item : *l) write_value(item, out);
    out.push_back('e');
  } else if (const PickleDict* m = v.dict()) {
    out.push_back('}');
    if (m->empty()) return;
    out.push_back('(');
    for (const auto& [key, value] : *m) {
      write_value(key, out);
      write_value(value, out);
    }
    out.push_back('u');
  }
}

}  // namespace

const PickleValue* PickleValue::find(const std::string& key) const {
  const PickleDict* d = dict();
  if (d == nullptr) return nullptr;
  for (const auto& [k, v] : *d) {
    if (const std::string* s = k.string(); s != nullptr && *s == key) return &v;
  }
  return nullptr;
}

PickleValue read_pickle(const std::string& bytes, const std::string& source, const PickleLimits& limits) {
  return Reader(bytes, source, limits).read();
}

std::string write_pickle(const PickleValue& value) {
  std::string out{static_cast<char>(0x80), static_cast<char>(2)};  // PROTO 2
  write_value(value, out);
  out.push_back('.');
  return out;
}

PickleValue pickle_dict(PickleDict entries) {
  return PickleValue{std::move(entries)};
}
PickleValue pickle_list(PickleList items) {
  return PickleValue{std::move(items)};
}
PickleValue pickle_string(std::string text) {
  return PickleValue{std::move(text)};
}
PickleValue pickle_int(int64_t value) {
  return PickleValue{value};
}

}  // namespace fsdpsim
