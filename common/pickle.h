#pragma once
/// Python pickles of plain data: what `torch.cuda.memory._dump_snapshot` writes (dicts, lists, tuples, strings,
/// integers, floats, booleans, None), read and written without Python. The reader runs no code: an opcode that would
/// import or call anything (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, persistent ids, extensions) is an
/// error naming it and its byte offset, as are truncation, nesting beyond a limit and files beyond a size limit.
/// Opcodes and their encodings: CPython's Lib/pickletools.py (protocols 0-5).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fsdpsim {

struct PickleValue;
struct PickleEntry;
using PickleList = std::vector<PickleValue>;
/// Entries in the order the pickle gives them (Python dicts keep insertion order). A struct, not std::pair: pair
/// needs complete types where the recursive value is still being declared.
using PickleDict = std::vector<PickleEntry>;

/// One value. Tuples read as lists; bytes read as strings. Integers beyond 64 bits read as reals (nearest double).
struct PickleValue {
  std::variant<std::monostate, bool, int64_t, double, std::string, PickleList, PickleDict> value;

  [[nodiscard]] bool is_none() const { return std::holds_alternative<std::monostate>(value); }
  [[nodiscard]] const std::string* string() const { return std::get_if<std::string>(&value); }
  [[nodiscard]] const int64_t* integer() const { return std::get_if<int64_t>(&value); }
  [[nodiscard]] const double* real() const { return std::get_if<double>(&value); }
  [[nodiscard]] const PickleList* list() const { return std::get_if<PickleList>(&value); }
  [[nodiscard]] const PickleDict* dict() const { return std::get_if<PickleDict>(&value); }
  /// The value of string key `key` in a dict; null when this is not a dict or has no such key.
  [[nodiscard]] const PickleValue* find(const std::string& key) const;
};

/// One key and its value.
struct PickleEntry {
  PickleValue first;
  PickleValue second;
};

/// Limits on what a pickle may hold (defaults sized for memory snapshots of long runs).
struct PickleLimits {
  int64_t max_bytes = int64_t{512} << 20;  ///< the file (common/limits.h kMaxSnapshotBytes)
  int32_t max_depth = 64;                  ///< nesting of containers
  int64_t max_items = int64_t{1} << 27;    ///< values in all containers together
};

/// Reads one pickle from `bytes`; `source` names the file in errors (ConfigError, key "pickle").
PickleValue read_pickle(const std::string& bytes, const std::string& source, const PickleLimits& limits = {});
/// Writes `value` as a protocol-2 pickle that Python's pickle.load reads back to the same data.
std::string write_pickle(const PickleValue& value);

/// Builders for writers.
PickleValue pickle_dict(PickleDict entries);
PickleValue pickle_list(PickleList items);
PickleValue pickle_string(std::string text);
PickleValue pickle_int(int64_t value);

}  // namespace fsdpsim
