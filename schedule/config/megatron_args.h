#pragma once
/// A pasted Megatron-LM command line (`--megatron-args "..."`) read into the configuration and, when it gives the
/// model's dimensions, into the model spec. Flags that do not change the schedule (learning rate, data paths, ...)
/// are accepted; any other unknown flag is an error naming the closest known one.

#include <optional>
#include <string>
#include <vector>

#include "schedule/config/fsdp_config.h"
#include "schedule/model/model.h"

namespace fsdpsim {

/// Splits a shell-like command line: white space separates words, quotes group them, a backslash-newline joins
/// lines (as in a pasted launch script). The launcher and script are dropped: everything up to the last word ending
/// in ".py", or else everything before the first flag.
std::vector<std::string> split_command_line(const std::string& text);

/// Applies Megatron-LM flags to `config` and to `model`. `model` may be empty: then the flags must define the whole
/// model (--num-layers, --hidden-size, --num-attention-heads, --vocab-size, ...) with Megatron's defaults for the
/// rest (LayerNorm, GeLU MLP, biases, learned positions, tied embeddings). Throws ConfigError naming the flag.
void apply_megatron_args(const std::string& args, FsdpConfig& config, std::optional<ModelSpec>& model);

/// The Megatron-LM flags fsdpsim reads (for `fsdpsim presets --megatron-flags` and error messages).
std::vector<std::string> known_megatron_flags();

}  // namespace fsdpsim
