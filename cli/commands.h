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
/// `fsdpsim exec`: run the schedule on the host backend or on GPUs.
void register_exec(CLI::App& app);
/// `fsdpsim validate`: predicted against measured.
void register_validate(CLI::App& app);
/// `fsdpsim calibrate`: measured rates into a GPU profile.
void register_calibrate(CLI::App& app);
/// `fsdpsim sweep`: every combination of configuration values, ranked.
void register_sweep(CLI::App& app);
/// `fsdpsim merge`: the parts of a sharded sweep, ranked as one.
void register_merge(CLI::App& app);
/// `fsdpsim fit`: the fewest GPUs / largest micro-batch / longest sequence that fits.
void register_fit(CLI::App& app);
/// `fsdpsim fidelity`: predicted against published measurements.
void register_fidelity(CLI::App& app);
/// `fsdpsim reference config|cli`: the generated reference pages of docs/reference/.
void register_reference(CLI::App& app);

}  // namespace fsdpsim::cli
