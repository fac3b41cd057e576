#include "common/yaml_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "common/limits.h"
#include "common/text.h"

namespace fsdpsim {
namespace {

std::string node_type_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "something else";
}

}  // namespace

SourceLocation location_of(const YAML::Node& node, const std::string& source) {
  SourceLocation where{source, 0, 0};
  if (node.IsDefined()) {
    const YAML::Mark mark = node.Mark();
    if (mark.line >= 0) {
      where.line = mark.line + 1;
      where.column = mark.column + 1;
    }
  }
  return where;
}

YamlDocument load_yaml_text(const std::string& text, const std::string& source) {
  try {
    return YamlDocument{YAML::Load(text), source};
  } catch (const YAML::Exception& e) {
    SourceLocation where{source, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    throw ConfigError(where, "", "malformed YAML: " + e.msg, "fix the syntax at this line");
  }
}

std::string read_text_file(const std::string& path) {
  return read_file_bytes(path, limits::kMaxInputFileBytes);
}

std::string read_file_bytes(const std::string& path, int64_t max_bytes) {
  std::error_code error;
  // A folder opens as a stream on Linux and reads as empty: say what it is instead of parsing nothing.
  if (std::filesystem::is_directory(path, error)) {
    throw ConfigError(SourceLocation{path, 0, 0}, "", "is a folder, not a file", "give the path of the file itself");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(SourceLocation{path, 0, 0}, "", "cannot open file",
                      "check the path, or give a preset name (see 'fsdpsim presets')");
  }
  // Refuse absurd files before reading them: parsing needs many times their size in memory (common/limits.h).
  const auto size = std::filesystem::file_size(path, error);
  if (!error && size > static_cast<uintmax_t>(max_bytes)) {
    throw ConfigError(SourceLocation{path, 0, 0}, "",
                      "a file of " + format_bytes(static_cast<int64_t>(size)) + " is beyond what fsdpsim models",
                      "such input files may hold at most " + format_bytes(max_bytes));
  }
  // Read at most one byte past the limit: a device or a pipe that never ends (/dev/zero) has no size to check first.
  std::string text;
  std::vector<char> chunk(size_t{1} << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      throw ConfigError(SourceLocation{path, 0, 0}, "",
                        "more than " + format_bytes(max_bytes) + " of input, and it has not ended",
                        "give a regular file of at most " + format_bytes(max_bytes));
    }
  }
  if (in.bad()) throw ConfigError(SourceLocation{path, 0, 0}, "", "cannot read file", "check its permissions");
  return text;
}

YamlDocument load_yaml_file(const std::string& path) {
  return load_yaml_text(read_text_file(path), path);
}

// ---------------------------------------------------------------------------------------------------------------
YamlValue::YamlValue(YAML::Node node, std::string source, std::string key_path)
    : node_(std::move(node)), source_(std::move(source)), key_path_(std::move(key_path)) {}

void YamlValue::fail(const std::string& problem, const std::string& fix) const {
  throw ConfigError(location(), key_path_, problem, fix);
}

std::string YamlValue::scalar(const std::string& expected) const {
  if (!node_.IsScalar()) fail("expected " + expected + ", got " + node_type_name(node_), "");
  return node_.Scalar();
}

std::string YamlValue::as_string() const {
  std::string text = scalar("a string");
  size_t bad = 0;
  if (!is_plain_text(text, &bad)) {
    fail("the text has a control character or is not valid UTF-8 (byte " + std::to_string(bad) + ")",
         "write plain UTF-8 text");
  }
  return text;
}

bool YamlValue::as_bool() const {
  const std::string text = scalar("true or false");
  if (text == "true") return true;
  if (text == "false") return false;
  fail("expected true or false, got '" + text + "'", "write true or false");
}

int64_t YamlValue::as_int(int64_t min, int64_t max) const {
  const std::string text = scalar("a whole number");
  long long value = 0;
  if (!parse_int64(text, &value)) fail("expected a whole number, got '" + text + "'", "write e.g. 8");
  if (value < min || value > max) {
    std::string range = "it must be ";
    if (max == INT64_MAX) {
      range += "at least " + std::to_string(min);
    } else {
      range += "between " + std::to_string(min) + " and " + std::to_string(max);
    }
    fail("value " + text + " is out of range", range);
  }
  return value;
}

int64_t YamlValue::as_count(int64_t min, int64_t max) const {
  const std::string text = scalar("a count");
  long long value = 0;
  if (!parse_count(text, &value)) fail("expected a whole count, got '" + text + "'", "write e.g. 500000000 or 5e8");
  if (value < min || value > max) {
    fail("count " + text + " is out of range",
         max == INT64_MAX ? "it must be at least " + std::to_string(min)
                          : "it must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return value;
}

double YamlValue::as_double(double min, double max) const {
  const std::string text = scalar("a number");
  double value = 0;
  if (!parse_double(text, &value)) fail("expected a number, got '" + text + "'", "write e.g. 0.8");
  if (value < min || value > max) {
    std::ostringstream range;
    range << "it must be between " << min << " and " << max;
    fail("value " + text + " is out of range", range.str());
  }
  return value;
}

std::string YamlValue::as_choice(const std::vector<std::string>& choices) const {
  const std::string text = scalar("one of: " + join(choices));
  if (std::find(choices.begin(), choices.end(), text) != choices.end()) return text;
  fail("unknown value '" + text + "'" + did_you_mean(text, choices), "valid: " + join(choices));
}

int64_t YamlValue::as_bytes(int64_t min_bytes) const {
  const std::string text = scalar("a size");
  std::string why;
  const auto value = parse_bytes(text, &why);
  if (!value) fail(why, "write a size such as \"80GiB\" or \"4096\"");
  if (*value < min_bytes)
    fail("size " + text + " is too small", "it must be at least " + std::to_string(min_bytes) + " bytes");
  return *value;
}

TimeNs YamlValue::as_time_ns() const {
  const std::string text = scalar("a duration");
  std::string why;
  const auto value = parse_time_ns(text, &why);
  if (!value) fail(why, "write a duration such as \"1.5us\"");
  if (*value > limits::kMaxLatencyNs) {
    fail("a latency of " + format_time_ns(*value) + " is beyond what fsdpsim models",
         "at most 1 s; write e.g. \"5us\"");
  }
  return *value;
}

double YamlValue::as_bandwidth_bytes_per_s() const {
  const std::string text = scalar("a bandwidth");
  std::string why;
  const auto value = parse_bandwidth_bytes_per_s(text, &why);
  if (!value) fail(why, "write a bandwidth such as \"450GB/s\" or \"400Gb/s\"");
  if (*value <= 0) fail("bandwidth must be positive", "write e.g. \"450GB/s\"");
  if (*value < limits::kMinBandwidthBytesPerS || *value > limits::kMaxBandwidthBytesPerS) {
    fail("a bandwidth of " + text + " is beyond what fsdpsim models", "use between 1MB/s and 1PB/s; check the unit");
  }
  return *value;
}

double YamlValue::as_flops_per_s() const {
  const std::string text = scalar("a compute rate");
  std::string why;
  const auto value = parse_flops_per_s(text, &why);
  if (!value) fail(why, "write a rate such as \"989TFLOPS\"");
  if (*value <= 0) fail("compute rate must be positive", "write e.g. \"989TFLOPS\"");
  if (*value < limits::kMinFlopsPerS || *value > limits::kMaxFlopsPerS) {
    fail("a compute rate of " + text + " is beyond what fsdpsim models",
         "use between 1GFLOPS and 10000PFLOPS; check the unit");
  }
  return *value;
}

// ---------------------------------------------------------------------------------------------------------------
YamlMap::YamlMap(YAML::Node node, std::string source, std::string path)
    : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {
  if (!node_.IsMap()) {
    throw ConfigError(location_of(node_, source_), path_.empty() ? "<top>" : path_,
                      "expected a mapping of 'key: value' lines, got " + node_type_name(node_),
                      "write the section as key: value pairs");
  }
}

std::string YamlMap::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool YamlMap::has(const std::string& key) const {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  for (const auto& entry : node_) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return true;
  }
  return false;
}

YAML::Node YamlMap::raw(const std::string& key) {
  if (!has(key)) {
    // A key the reader does not know that is one typo away is most likely the missing one: point at it.
    for (const auto& entry : node_) {
      if (!entry.first.IsScalar()) continue;
      const std::string present = entry.first.Scalar();
      const bool known = read_.count(present) > 0 || std::find(known_.begin(), known_.end(), present) != known_.end();
      if (!known && closest_match(present, {key}) == key) {
        throw ConfigError(location_of(entry.first, source_), key_path(present),
                          "unknown key (did you mean '" + key + "'?); '" + key_path(key) + "' is missing",
                          "rename it to '" + key + "'");
      }
    }
    fail("missing required key '" + key_path(key) + "'", "add '" + key + ": ...' to this section");
  }
  read_.insert(key);
  for (const auto& entry : node_) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  }
  return YAML::Node();
}

YamlValue YamlMap::get(const std::string& key) {
  return YamlValue(raw(key), source_, key_path(key));
}

YamlMap YamlMap::map(const std::string& key) {
  return YamlMap(raw(key), source_, key_path(key));
}

std::vector<YamlValue> YamlMap::list(const std::string& key) {
  const YAML::Node node = raw(key);
  if (!node.IsSequence()) {
    throw ConfigError(location_of(node, source_), key_path(key), "expected a list, got " + node_type_name(node),
                      "write [a, b, c] or one '- item' per line");
  }
  std::vector<YamlValue> out;
  for (size_t i = 0; i < node.size(); ++i) {
    out.emplace_back(node[i], source_, key_path(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::string YamlMap::string_or(const std::string& key, const std::string& fallback) {
  return has(key) ? get(key).as_string() : fallback;
}

bool YamlMap::bool_or(const std::string& key, bool fallback) {
  return has(key) ? get(key).as_bool() : fallback;
}

int64_t YamlMap::int_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  return has(key) ? get(key).as_int(min, max) : fallback;
}

double YamlMap::double_or(const std::string& key, double fallback, double min, double max) {
  return has(key) ? get(key).as_double(min, max) : fallback;
}

void YamlMap::allow(const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    read_.insert(key);
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  }
}

std::vector<std::string> YamlMap::keys() const {
  std::vector<std::string> out;
  for (const auto& entry : node_) out.push_back(entry.first.Scalar());
  return out;
}

void YamlMap::finish() const {
  std::set<std::string> seen;
  for (const auto& entry : node_) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string("<non-scalar key>");
    if (!seen.insert(key).second) {
      throw ConfigError(location_of(entry.first, source_), key_path(key), "key appears twice",
                        "keep one of the two entries");
    }
    if (read_.count(key) == 0) {
      std::vector<std::string> valid = known_;
      std::sort(valid.begin(), valid.end());
      throw ConfigError(location_of(entry.first, source_), key_path(key), "unknown key" + did_you_mean(key, valid),
                        "valid keys here: " + join(valid));
    }
  }
}

void YamlMap::fail(const std::string& problem, const std::string& fix) const {
  throw ConfigError(location(), path_, problem, fix);
}

}  // namespace fsdpsim
