// load_model: a preset name, a model YAML file or a Hugging Face config.json (or its folder) into a ModelSpec.
#include "frontends/model_files.h"

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "common/yaml_reader.h"

namespace fsdpsim {
namespace {

// One reader for every input file: it refuses folders and files beyond limits::kMaxInputFileBytes.
std::string read_model_file(const std::string& path) {
  return read_text_file(path);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void unknown_model(const std::string& name) {
  const std::vector<std::string> presets = model_preset_names();
  throw ConfigError("unknown model '" + name + "'" + did_you_mean(name, presets) +
                    ": it is neither a preset nor an existing file (presets: " + join(presets) +
                    "; or give the path of a model .yaml file or of a Hugging Face config.json)");
}

}  // namespace

ModelSpec load_model(const std::string& name_or_path) {
  for (const std::string& preset : model_preset_names()) {
    if (preset == name_or_path) return model_preset(name_or_path);
  }
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path path(name_or_path);
  // A Hugging Face model directory holds its config.json.
  if (fs::is_directory(path, error) && fs::is_regular_file(path / "config.json", error)) {
    const std::string config = (path / "config.json").string();
    return import_hf_config(read_model_file(config), config);
  }
  if (fs::is_directory(path, error)) {
    throw ConfigError(SourceLocation{name_or_path, 0, 0}, "", "is a folder without a config.json, not a model file",
                      "give a model .yaml file, a Hugging Face config.json, or the folder that holds it");
  }
  if (!fs::is_regular_file(path, error)) unknown_model(name_or_path);
  if (ends_with(name_or_path, ".json")) return import_hf_config(read_model_file(name_or_path), name_or_path);
  return parse_model_yaml(read_model_file(name_or_path), name_or_path);
}

}  // namespace fsdpsim
