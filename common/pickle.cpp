// Pickles of plain data written (write_pickle) and looked into; the reader is pickle_reader.cpp.
#include "common/pickle.h"

#include <bit>
#include <cstdint>

namespace fsdpsim {
namespace {

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
