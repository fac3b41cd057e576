#pragma once
/// The options every command shares (--model, --topology, --config, --megatron-args, --set, --print-config), as
/// CLI11 sees them; what they mean is the job layer's (job/job.h).

#include <CLI/CLI.hpp>

#include "job/job.h"

namespace fsdpsim::cli {

/// Registers the shared options on a subcommand.
void add_job_options(CLI::App& command, JobOptions& options);
/// Prints the effective configuration when --print-config was given.
void maybe_print_config(const JobOptions& options, const Job& job);
/// load_or_build_schedule(), printing the configuration when --print-config was given.
Schedule load_or_build_schedule_for_cli(const std::string& schedule_file, const JobOptions& options, Topology* topology,
                                        std::vector<std::string>* read_not_modelled = nullptr);

}  // namespace fsdpsim::cli
