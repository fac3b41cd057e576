#pragma once
/// A model's consistency checks with a hook that says where each key was written, for the readers of model files
/// (model_yaml.cpp here, frontends/hf_config.cpp for Hugging Face's config.json).

#include <functional>
#include <string>

#include "common/error.h"
#include "model/model.h"

namespace fsdpsim {

/// Where a dotted key ("moe.top_k") was written, for error messages.
using KeyLocator = std::function<SourceLocation(const std::string& key)>;
/// check_model with the location of each key (the YAML parser passes the line of every key it read).
void check_model_at(const ModelSpec& model, const KeyLocator& locate);

}  // namespace fsdpsim
