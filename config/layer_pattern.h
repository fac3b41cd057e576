#pragma once
/// Megatron-LM's layer-pattern arguments (`--moe-layer-freq "([0]*3+[1]*58)"`): a Python list expression of
/// integers, lists `[a, b]`, `+` (concatenation), `*` (repetition) and parentheses, evaluated without Python.

#include <cstdint>
#include <string>
#include <vector>

namespace fsdpsim {

/// Evaluates `text`. Throws ConfigError (key `flag`) on anything else, or when the list would exceed `max_length`.
std::vector<int64_t> eval_layer_pattern(const std::string& text, const std::string& flag, int64_t max_length);

}  // namespace fsdpsim
