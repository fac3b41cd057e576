#pragma once
/// The one mechanism for a struct whose fields are keys of a YAML mapping: a table, one row per key, that says
/// whether the key must be there, how its value is read and checked, and how it is written back. The table drives
/// the list of allowed keys (so a typo gets "did you mean"), the reader (rows in table order) and the writer (the
/// same order), so a key is named once. The model is the configuration's key table (config/fsdp_config.cpp).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/yaml_reader.h"

namespace fsdpsim {

/// Whether a key must appear.
enum class KeyPresence : uint8_t { required, optional };

/// When a key is read: every row of the first pass in table order, then every row of the second. The writer ignores
/// passes. One pass is the rule; a second keeps a reader's order where it differs from the file's (the table's),
/// and with it which of two bad keys is reported first.
enum class ReadPass : uint8_t { first, second };

/// One key of a struct T.
template <class T>
struct KeyRow {
  std::string key;
  KeyPresence presence = KeyPresence::required;
  /// Reads and checks the value into the struct (the fields read by earlier rows are set already).
  std::function<void(T&, const YamlValue&)> read;
  /// Writes `key` and its value, or nothing for an optional key at its default (files stay as short as the user's).
  std::function<void(YAML::Emitter&, const std::string& key, const T&)> write;
  ReadPass pass = ReadPass::first;
};

/// Writes one `key: value` entry (what most rows' writers do).
template <class V>
void emit_key(YAML::Emitter& out, const std::string& key, const V& value) {
  out << YAML::Key << key << YAML::Value << value;
}

/// Every key of the table, in order.
template <class T>
std::vector<std::string> keys_of(const std::vector<KeyRow<T>>& rows) {
  std::vector<std::string> keys;
  for (const auto& row : rows) keys.push_back(row.key);
  return keys;
}

/// Reads every row present into `out`, pass by pass in table order; a required key that is missing is an error
/// naming it.
template <class T>
void read_keys(YamlMap& map, const std::vector<KeyRow<T>>& rows, T& out) {
  for (const ReadPass pass : {ReadPass::first, ReadPass::second}) {
    for (const auto& row : rows) {
      if (row.pass != pass || (row.presence == KeyPresence::optional && !map.has(row.key))) continue;
      row.read(out, map.get(row.key));
    }
  }
}

/// Writes every row, in table order, into a mapping the caller has opened.
template <class T>
void write_keys(YAML::Emitter& out, const std::vector<KeyRow<T>>& rows, const T& value) {
  for (const auto& row : rows) row.write(out, row.key, value);
}

}  // namespace fsdpsim
