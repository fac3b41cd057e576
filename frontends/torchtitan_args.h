#pragma once
/// A torchtitan command line (`--torchtitan-args "..."`) as torchtitan runs jobs since its configurations moved from
/// TOML files into Python (torchtitan b5bcd76c, 2026-08): `--module llama3 --config llama3_70b` names a function of a
/// config registry, and the frozen `--section.option value` flags override what it returns. fsdpsim knows the
/// registry functions of the models it has (their settings are in torchtitan_args.cpp with their source), reads every
/// flag of torchtitan's frozen command-line set (tests/unit_tests/test_no_new_cli_options.py), and reads the world
/// size from the launcher (`NGPU=8 ./run_train.sh`, `torchrun --nnodes 4 --nproc_per_node 8`). What the flags and the
/// function say is translated into the job-TOML layout and read by torchtitan_config.h, so both front doors share one
/// meaning; an error names the flag or the registry function it came from.

#include <optional>
#include <string>
#include <vector>

#include "config/fsdp_config.h"
#include "frontends/torchtitan_config.h"
#include "model/model.h"

namespace fsdpsim {

/// Applies a torchtitan command line to `config` and `model` (a model given before, by --model, is kept: the
/// registry function's model is then only named). A GPU count from the launcher is returned in the world, which
/// settle_torchtitan_world applies unless nodes or gpus are set otherwise. Throws ConfigError naming the flag.
TorchtitanWorld apply_torchtitan_args(const std::string& args, FsdpConfig& config, std::optional<ModelSpec>& model);

/// The config-registry functions fsdpsim knows, as "module config" lines (for messages and the docs).
std::vector<std::string> known_torchtitan_registry_configs();

}  // namespace fsdpsim
