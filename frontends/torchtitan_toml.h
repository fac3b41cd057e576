#pragma once
/// A torchtitan job TOML as its readers (torchtitan_config.cpp and its parts) see it: typed lookups by dotted path,
/// each error at the value's file:line:col, and the configuration keys they set with the TOML's key as origin.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "common/error.h"
#include "config/fsdp_config.h"

namespace fsdpsim::torchtitan {

/// A parsed TOML document: typed lookups by dotted path, each error at the value's file:line:col.
class Toml {
 public:
  Toml(toml::table root, std::string source) : root_(std::move(root)), source_(std::move(source)) {}

  [[nodiscard]] const toml::table& root() const { return root_; }
  [[nodiscard]] const std::string& source() const { return source_; }

  /// The node at a dotted path ("parallelism.tensor_parallel_degree"), or nullptr.
  [[nodiscard]] const toml::node* find(const std::string& path) const;
  [[nodiscard]] bool has(const std::string& path) const { return find(path) != nullptr; }

  [[nodiscard]] SourceLocation location_of(const toml::node& node) const;
  /// Where `path` is, or else its table, or else the file.
  [[nodiscard]] SourceLocation location(const std::string& path) const;

  [[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix) const;

  [[nodiscard]] std::optional<int64_t> integer(const std::string& path, int64_t min, int64_t max) const;
  [[nodiscard]] std::optional<bool> boolean(const std::string& path) const;
  [[nodiscard]] std::optional<std::string> string(const std::string& path) const;
  /// One of `choices`, exactly.
  [[nodiscard]] std::optional<std::string> choice(const std::string& path,
                                                  const std::vector<std::string>& choices) const;
  /// A list of strings; torchtitan's command line also takes one comma-separated string.
  [[nodiscard]] std::optional<std::vector<std::string>> strings(const std::string& path) const;

  /// The key's own name, without its table ("seq_len" for "training.seq_len").
  static std::string leaf(const std::string& path) { return path.substr(path.rfind('.') + 1); }
  /// "a table", "a whole number", ...: what a node is, for messages.
  static std::string type_name(const toml::node& node);

 private:
  toml::table root_;
  std::string source_;
};

/// Parses TOML text; malformed TOML is a ConfigError at its line. `source` names the text in messages.
Toml parse_toml(const std::string& text, const std::string& source);

/// The first of `paths` the TOML has, or else the first of them (old torchtitan kept some keys under [training] or
/// [experimental]).
std::string first_present(const Toml& t, const std::vector<std::string>& paths);

/// Sets a configuration key through the one declared key table; its origin (and any error) is the TOML's `path`.
void set_key(FsdpConfig& config, const Toml& t, const std::string& key, const std::string& value,
             const std::string& path);

}  // namespace fsdpsim::torchtitan
