#pragma once
/// The subcommands of `fsdpsim`; each registers itself on the app and runs when chosen.

#include <CLI/CLI.hpp>

namespace fsdpsim::cli {

/// `fsdpsim presets`: models, topologies, GPU profiles, configuration keys.
void register_presets(CLI::App& app);
/// `fsdpsim schedule`: build the IR, validate it, write it, print its summary.
void register_schedule(CLI::App& app);
/// `fsdpsim simulate`: predict step time and the memory timeline.
void register_simulate(CLI::App& app);

}  // namespace fsdpsim::cli
