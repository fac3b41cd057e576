#pragma once
/// One job path for every command, the sweep, fit and the fidelity suite: the inputs (--model, --topology, --config,
/// --megatron-args, --set) resolve into a model, a topology, a configuration and the layout that ties them together;
/// the schedule is then built, validated and its groups checked against the topology, in that order, whoever asks.

#include <functional>
#include <string>
#include <vector>

#include "builders/budget_range.h"
#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// What the user gave, as text (the command line's shared options).
struct JobOptions {
  std::string model;
  std::string topology = "dgx-h100-ndr";
  std::string config;
  std::string megatron_args;
  std::string torchtitan_config;  ///< a torchtitan job TOML (--torchtitan-config)
  std::string torchtitan_args;    ///< a torchtitan command line (--torchtitan-args)
  std::vector<std::string> sets;
  bool print_config = false;
};

/// A resolved job.
struct Job {
  ModelSpec model;
  Topology topology;
  FsdpConfig config;
  ParallelLayout layout;
  std::vector<std::string> read_not_modelled;  ///< input settings read but not modelled (Megatron-LM flags, ...)
  /// What the inputs allow but a user most likely did not mean, each naming the flag or key that changes it.
  std::vector<std::string> warnings;
};

/// The job's inputs before the layout is resolved (the configuration as the user gave it, nothing forced yet).
struct JobInputs {
  ModelSpec model;
  Topology topology;
  FsdpConfig config;
  std::vector<std::string> read_not_modelled;  ///< input settings read but not modelled (Megatron-LM flags, ...)
};

/// The job's layout in one line for a report's header: the group sizes (dp, tp, cp, ep, pp and virtual stages), the
/// micro-batches and their size, the sequence, recompute and precision, e.g. "dp=8 tp=1 cp=1 ep=1 pp=1; 4
/// micro-batches of 1 × 8192 tokens; recompute full; bf16". A user reads back what the simulator took from a launch
/// script without --print-config.
[[nodiscard]] std::string layout_text(const FsdpConfig& config, const ParallelLayout& layout);

/// The topology a job of `config.gpus` GPUs runs on, and `config.nodes` to match. gpus = 0 (the default) leaves
/// both as they are; a multiple of the node sets nodes; fewer GPUs than a node are that part of one node: a node
/// of `gpus` GPUs, its own NVLink domain, its share of the node's NICs, one node (fine-tuning on 1, 2 or 4 GPUs of
/// an 8-GPU box). A count above a node that is not a multiple of it would leave a partial node, whose ranks differ
/// from the others; that is refused. Idempotent: the result given again gives itself.
Topology topology_for_gpus(const Topology& topology, FsdpConfig& config);

/// Loads model, topology and configuration: config file, then Megatron-LM flags, then a torchtitan TOML or command
/// line, then --set
/// overrides (last wins; the TOML's degrees then fix or check the node count).
JobInputs load_job_inputs(const JobOptions& options);
/// Loads and checks everything: the inputs, then the layout.
Job resolve_job(const JobOptions& options);

/// Whether a built schedule is checked against every IR invariant (schedule/validate.h) before it is returned. The
/// builders' own tests prove their output valid; a sweep of thousands of points may skip the check to stay fast.
enum class ScheduleCheck : uint8_t { validate, trust_builder };

/// The one path from a configuration to a runnable schedule: resolve the layout (which applies the overrides
/// Megatron-FSDP forces to `config`), build, validate, then check that every group can be placed on `topology`
/// (blaming the configuration key that sized a group that cannot). Throws ConfigError or ScheduleError. `budgets`,
/// when given, receives the communication budgets that build the same schedule (builders/budget_range.h).
Schedule build_job_schedule(const ModelSpec& model, FsdpConfig& config, const Topology& topology,
                            ScheduleCheck check = ScheduleCheck::validate, BudgetRange* budgets = nullptr);
/// The same for a resolved job.
Schedule build_job_schedule(const Job& job);

/// The schedule to run: read from `schedule_file` (validated, and checked against the topology's node size and any
/// --set nodes) or built from the job. Sets `topology`. When the schedule is built, `on_resolved` (when given) sees
/// the resolved job before the build (the CLI prints --print-config there, so a failing build still shows it).
Schedule load_or_build_schedule(const std::string& schedule_file, const JobOptions& options, Topology* topology,
                                const std::function<void(const Job&)>& on_resolved = {});

}  // namespace fsdpsim
