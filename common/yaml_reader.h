#pragma once
/// Strict YAML reading: every key of a mapping must be known, every value must have the declared type and unit,
/// and every error names the file, line and key path and says what would be valid.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/error.h"
#include "common/units.h"

namespace fsdpsim {

/// A parsed YAML document and the name to use for it in messages (a path, or "<preset llama3-8b>").
struct YamlDocument {
  YAML::Node root;
  std::string source;
};

/// Reads a whole file; a missing or unreadable file is a ConfigError naming it.
std::string read_text_file(const std::string& path);
/// The same for any file of at most `max_bytes` (binary inputs such as memory snapshots have their own limit).
std::string read_file_bytes(const std::string& path, int64_t max_bytes);
/// Loads a YAML file; a missing file or a syntax error is a ConfigError naming the file and line.
YamlDocument load_yaml_file(const std::string& path);
/// Parses YAML text; `source` names it in messages.
YamlDocument load_yaml_text(const std::string& text, const std::string& source);

/// The location of a node ("file:line:col"), for errors about values that are not mapping entries.
SourceLocation location_of(const YAML::Node& node, const std::string& source);

/// A scalar value with where it came from; converts strictly, throwing a ConfigError that names the key.
class YamlValue {
 public:
  YamlValue(YAML::Node node, std::string source, std::string key_path);

  [[nodiscard]] std::string as_string() const;
  [[nodiscard]] bool as_bool() const;
  /// A whole number in [min, max].
  [[nodiscard]] int64_t as_int(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  /// A count that may be written in scientific notation ("1e9"), in [min, max].
  [[nodiscard]] int64_t as_count(int64_t min = 0, int64_t max = INT64_MAX) const;
  /// A real number in [min, max].
  [[nodiscard]] double as_double(double min = -1e300, double max = 1e300) const;
  /// One of `choices`, exactly.
  [[nodiscard]] std::string as_choice(const std::vector<std::string>& choices) const;
  /// A size ("80GiB"); must be ≥ min_bytes.
  [[nodiscard]] int64_t as_bytes(int64_t min_bytes = 0) const;
  [[nodiscard]] TimeNs as_time_ns() const;
  [[nodiscard]] double as_bandwidth_bytes_per_s() const;
  [[nodiscard]] double as_flops_per_s() const;

  [[nodiscard]] const YAML::Node& node() const { return node_; }
  [[nodiscard]] SourceLocation location() const { return location_of(node_, source_); }
  [[nodiscard]] const std::string& key_path() const { return key_path_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  /// Throws a ConfigError at this value.
  [[noreturn]] void fail(const std::string& problem, const std::string& fix) const;

 private:
  [[nodiscard]] std::string scalar(const std::string& expected) const;
  YAML::Node node_;
  std::string source_;
  std::string key_path_;
};

/// Reads one mapping strictly. Call finish() when done: any key not read is reported as unknown, with the valid
/// keys and the closest one ("did you mean").
class YamlMap {
 public:
  /// `node` must be a mapping; `path` is its dotted key path ("" at the top).
  YamlMap(YAML::Node node, std::string source, std::string path);

  [[nodiscard]] bool has(const std::string& key) const;
  /// The value at `key`; a missing required key is an error.
  [[nodiscard]] YamlValue get(const std::string& key);
  /// A nested mapping.
  [[nodiscard]] YamlMap map(const std::string& key);
  /// A sequence: each element as a value.
  [[nodiscard]] std::vector<YamlValue> list(const std::string& key);
  /// Marks the key read and returns the raw node (for sequences of mappings and other shapes).
  [[nodiscard]] YAML::Node raw(const std::string& key);

  [[nodiscard]] std::string string_or(const std::string& key, const std::string& fallback);
  [[nodiscard]] bool bool_or(const std::string& key, bool fallback);
  [[nodiscard]] int64_t int_or(const std::string& key, int64_t fallback, int64_t min = INT64_MIN,
                               int64_t max = INT64_MAX);
  [[nodiscard]] double double_or(const std::string& key, double fallback, double min = -1e300, double max = 1e300);

  /// Declares keys that may appear but are read elsewhere (so finish() does not flag them).
  void allow(const std::vector<std::string>& keys);
  /// Throws on the first key that was neither read nor allowed.
  void finish() const;

  [[nodiscard]] SourceLocation location() const { return location_of(node_, source_); }
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] std::string key_path(const std::string& key) const;
  [[nodiscard]] const YAML::Node& node() const { return node_; }
  /// The keys present, in file order.
  [[nodiscard]] std::vector<std::string> keys() const;
  [[noreturn]] void fail(const std::string& problem, const std::string& fix) const;

 private:
  YAML::Node node_;
  std::string source_;
  std::string path_;
  std::set<std::string> read_;
  mutable std::vector<std::string> known_;  // every key asked about, for suggestions
};

}  // namespace fsdpsim
