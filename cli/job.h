#pragma once
/// The inputs every command shares: --model, --topology, --config, --megatron-args, --set, --print-config. They
/// resolve into one job: a model, a topology, a configuration and the layout that ties them together.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "schedule/fsdp_config.h"
#include "schedule/ir.h"
#include "schedule/model.h"
#include "schedule/parallel_layout.h"
#include "topologies/hardware.h"

namespace fsdpsim::cli {

/// What the user gave on the command line.
struct JobOptions {
  std::string model;
  std::string topology = "dgx-h100-ndr";
  std::string config;
  std::string megatron_args;
  std::vector<std::string> sets;
  bool print_config = false;
  std::string schedule_file_hint;  ///< names a schedule file in errors about it
};

/// A resolved job.
struct Job {
  ModelSpec model;
  Topology topology;
  FsdpConfig config;
  ParallelLayout layout;
};

/// The job's inputs before the layout is resolved (the configuration as the user gave it, nothing forced yet).
struct JobInputs {
  ModelSpec model;
  Topology topology;
  FsdpConfig config;
};

/// Loads model, topology and configuration: config file, then Megatron-LM flags, then --set overrides.
JobInputs load_job_inputs(const JobOptions& options);

/// Registers the shared options on a subcommand.
void add_job_options(CLI::App& command, JobOptions& options);
/// Loads and checks everything: config file, then Megatron-LM flags, then --set overrides (last wins).
Job resolve_job(const JobOptions& options);
/// The schedule to run: read from `schedule_file` (validated, and checked against the topology's node size and any
/// --set nodes) or built from the job. Sets `topology`.
Schedule load_or_build_schedule(const std::string& schedule_file, const JobOptions& options, Topology* topology);
/// Prints the effective configuration when --print-config was given.
void maybe_print_config(const JobOptions& options, const Job& job);

}  // namespace fsdpsim::cli
