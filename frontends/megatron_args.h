#pragma once
/// A pasted Megatron-LM command line (`--megatron-args "..."`) read into the configuration and, when it gives the
/// model's dimensions, into the model spec. Every flag of Megatron-LM's parser is known (megatron_flag_table.inc,
/// generated from arguments.py by scripts/megatron_flags.py); those that do not shape the schedule (learning rate,
/// data, logging, ...) are read and listed as not modelled; a flag the parser does not have is an error naming the
/// closest one. All problems of one command line are reported in one error.

#include <optional>
#include <string>
#include <vector>

#include "config/fsdp_config.h"
#include "model/model.h"

namespace fsdpsim {

/// What reading a command line found besides the configuration: the flags it read without modelling them.
struct MegatronArgsRead {
  std::vector<std::string> not_modelled;  ///< sorted, each once ("--lr", "--save", ...)
};

/// Splits a shell-like command line: white space separates words, quotes group them, a backslash-newline joins
/// lines (as in a pasted launch script). The launcher and script are dropped: everything up to the last word ending
/// in ".py", or else everything before the first flag.
std::vector<std::string> split_command_line(const std::string& text);

/// Applies Megatron-LM flags to `config` and to `model`. `model` may be empty: then the flags must define the whole
/// model (--num-layers, --hidden-size, --num-attention-heads, --vocab-size, ...) with Megatron's defaults for the
/// rest (LayerNorm, GeLU MLP, biases, learned positions, tied embeddings). Throws one ConfigError listing every
/// problem (unknown flags, missing or bad values).
MegatronArgsRead apply_megatron_args(const std::string& args, FsdpConfig& config, std::optional<ModelSpec>& model);

/// Every flag of Megatron-LM's parser at the table's commit (for `fsdpsim presets --megatron-flags` and errors).
std::vector<std::string> known_megatron_flags();
/// The flags that change what fsdpsim builds.
std::vector<std::string> modelled_megatron_flags();

}  // namespace fsdpsim
