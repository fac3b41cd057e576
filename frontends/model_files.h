#pragma once
/// A model as a user names it: a built-in preset, a model YAML file, or a Hugging Face config.json (or the folder
/// that holds it), read into a ModelSpec.

#include <string>

#include "model/model.h"

namespace fsdpsim {

/// Loads `name_or_path`: a preset name, a .yaml model file, or a Hugging Face config.json or its folder.
ModelSpec load_model(const std::string& name_or_path);
/// Imports a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3).
ModelSpec import_hf_config(const std::string& json_text, const std::string& source);

}  // namespace fsdpsim
