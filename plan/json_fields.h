#pragma once
/// Typed reads of the fields of a JSON file fsdpsim wrote (a sweep part): a missing key or a wrong type is a
/// ConfigError naming the file, its line, the key's path and how to write the file again.

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_location.h"

namespace fsdpsim {

class JsonFields {
 public:
  using Json = nlohmann::ordered_json;
  /// `text` and `source` are the file's text and name (for locations); `fix` ends every error.
  JsonFields(const std::string& text, const std::string& source, std::string fix)
      : text_(text), source_(source), fix_(std::move(fix)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw ConfigError(json_path_location(text_, path, source_), path, problem, fix_);
  }
  /// The member `key` of `object` (found at `path`).
  const Json& at(const Json& object, const std::string& path, const std::string& key) const {
    if (!object.is_object()) fail(path, "expected an object");
    const auto it = object.find(key);
    if (it == object.end()) fail(join_path(path, key), "missing");
    return *it;
  }
  /// The member `key` of `object` as a T: bool, std::string, an integer type (range-checked) or a floating type.
  template <typename T>
  T get(const Json& object, const std::string& path, const std::string& key) const {
    const Json& v = at(object, path, key);
    const std::string where = join_path(path, key);
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) fail(where, "expected true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) fail(where, "expected a string");
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) fail(where, "expected a whole number");
      if (v.is_number_unsigned()
              ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())
              : v.get<int64_t>() < std::numeric_limits<T>::min() || v.get<int64_t>() > std::numeric_limits<T>::max()) {
        fail(where, "out of range");
      }
    } else {
      if (!v.is_number()) fail(where, "expected a number");
    }
    return v.get<T>();
  }
  static std::string join_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  const std::string& text_;
  const std::string& source_;
  std::string fix_;
};

}  // namespace fsdpsim
