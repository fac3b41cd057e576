// The torchtitan job TOML's typed lookups (torchtitan_toml.h): each value read by dotted path, each error at its line.
#include "frontends/torchtitan_toml.h"

#include <algorithm>

#include "common/text.h"

namespace fsdpsim::torchtitan {

const toml::node* Toml::find(const std::string& path) const {
  const toml::node* node = &root_;
  for (const std::string& part : split(path, '.')) {
    const toml::table* table = node->as_table();
    node = table != nullptr ? table->get(part) : nullptr;
    if (node == nullptr) return nullptr;
  }
  return node;
}

SourceLocation Toml::location_of(const toml::node& node) const {
  const toml::source_position at = node.source().begin;
  return SourceLocation{source_, static_cast<int>(at.line), static_cast<int>(at.column)};
}

SourceLocation Toml::location(const std::string& path) const {
  for (std::string p = path; !p.empty(); p = p.substr(0, std::min(p.size(), p.rfind('.')))) {
    if (const toml::node* node = find(p)) return location_of(*node);
    if (p.find('.') == std::string::npos) break;
  }
  return SourceLocation{source_, 0, 0};
}

void Toml::fail(const std::string& path, const std::string& problem, const std::string& fix) const {
  throw ConfigError(location(path), path, problem, fix);
}

std::optional<int64_t> Toml::integer(const std::string& path, int64_t min, int64_t max) const {
  const toml::node* node = find(path);
  if (node == nullptr) return std::nullopt;
  const auto* value = node->as_integer();
  if (value == nullptr)
    fail(path, "expected a whole number, got " + type_name(*node), "write e.g. " + leaf(path) + " = 1");
  if (value->get() < min || value->get() > max) {
    fail(path, "value " + std::to_string(value->get()) + " is out of range",
         "it must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return value->get();
}

std::optional<bool> Toml::boolean(const std::string& path) const {
  const toml::node* node = find(path);
  if (node == nullptr) return std::nullopt;
  const auto* value = node->as_boolean();
  if (value == nullptr) fail(path, "expected true or false, got " + type_name(*node), "write true or false");
  return value->get();
}

std::optional<std::string> Toml::string(const std::string& path) const {
  const toml::node* node = find(path);
  if (node == nullptr) return std::nullopt;
  const auto* value = node->as_string();
  if (value == nullptr) fail(path, "expected a quoted string, got " + type_name(*node), "write e.g. \"...\"");
  return value->get();
}

std::optional<std::string> Toml::choice(const std::string& path, const std::vector<std::string>& choices) const {
  std::optional<std::string> value = string(path);
  if (value && std::find(choices.begin(), choices.end(), *value) == choices.end()) {
    fail(path, "unknown value '" + *value + "'" + did_you_mean(*value, choices), "valid: " + join(choices));
  }
  return value;
}

std::optional<std::vector<std::string>> Toml::strings(const std::string& path) const {
  const toml::node* node = find(path);
  if (node == nullptr) return std::nullopt;
  std::vector<std::string> out;
  if (const auto* text = node->as_string()) {
    for (const std::string& item : split(text->get(), ',')) {
      if (!trim_copy(item).empty()) out.push_back(trim_copy(item));
    }
    return out;
  }
  const toml::array* array = node->as_array();
  if (array == nullptr) fail(path, "expected a list of strings, got " + type_name(*node), "write e.g. [\"a\", \"b\"]");
  for (const toml::node& item : *array) {
    const auto* text = item.as_string();
    if (text == nullptr) {
      throw ConfigError(location_of(item), path, "expected a string in the list, got " + type_name(item),
                        "quote each item");
    }
    out.push_back(text->get());
  }
  return out;
}

std::string Toml::type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "a list";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "a whole number";
    case toml::node_type::floating_point:
      return "a real number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

Toml parse_toml(const std::string& text, const std::string& source) {
  try {
    return Toml(toml::parse(text, source), source);
  } catch (const toml::parse_error& e) {
    const toml::source_position at = e.source().begin;
    throw ConfigError(SourceLocation{source, static_cast<int>(at.line), static_cast<int>(at.column)}, "",
                      "malformed TOML: " + std::string(e.description()), "fix the syntax at this line");
  }
}

std::string first_present(const Toml& t, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (t.has(p)) return p;
  }
  return paths.front();
}

void set_key(FsdpConfig& config, const Toml& t, const std::string& key, const std::string& value,
             const std::string& path) {
  set_key_from(config, key, value,
               ValueSource{.label = "torchtitan " + path, .at = t.location(path), .errors_at = true, .key = path});
}

}  // namespace fsdpsim::torchtitan
