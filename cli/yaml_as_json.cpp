#include "cli/yaml_as_json.h"

#include <charconv>
#include <regex>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

namespace fsdpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

Json scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: a string whatever it looks like
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  if (text == "null" || text == "~" || text.empty()) return nullptr;
  int64_t whole = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), whole);
  if (error == std::errc() && end == text.data() + text.size()) return whole;
  static const std::regex real(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(text, real)) return std::stod(text);
  return text;
}

Json convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& kv : node) object[kv.first.as<std::string>()] = convert(kv.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(convert(item));
      return array;
    }
    case YAML::NodeType::Scalar:
      return scalar(node);
    default:
      return nullptr;
  }
}

}  // namespace

std::string yaml_as_json(const std::string& yaml_text) {
  return convert(YAML::Load(yaml_text)).dump(1) + "\n";
}

}  // namespace fsdpsim::cli
