#include "job/job.h"

#include <algorithm>
#include <optional>

#include "builders/builder.h"
#include "common/error.h"
#include "common/int_math.h"
#include "common/yaml_reader.h"
#include "frontends/megatron_args.h"
#include "frontends/model_files.h"
#include "frontends/torchtitan_args.h"
#include "frontends/torchtitan_config.h"
#include "job/placement_check.h"
#include "schedule/ir_yaml.h"
#include "schedule/validate.h"

namespace fsdpsim {

JobInputs load_job_inputs(const JobOptions& options) {
  FsdpConfig config = load_config(options.config);
  std::optional<ModelSpec> model;
  if (!options.model.empty()) model = load_model(options.model);
  std::vector<std::string> read_not_modelled;
  if (!options.megatron_args.empty()) {
    read_not_modelled = apply_megatron_args(options.megatron_args, config, model).not_modelled;
  }
  std::optional<TorchtitanWorld> torchtitan;
  if (!options.torchtitan_config.empty() && !options.torchtitan_args.empty()) {
    throw ConfigError("--torchtitan-config and --torchtitan-args both describe the job: give one of them");
  }
  if (!options.torchtitan_config.empty())
    torchtitan = apply_torchtitan_config(options.torchtitan_config, config, model);
  if (!options.torchtitan_args.empty()) torchtitan = apply_torchtitan_args(options.torchtitan_args, config, model);
  for (const auto& assignment : options.sets) apply_override(config, assignment);
  if (!model) {
    throw ConfigError(
        "no model: give --model PRESET|FILE, --torchtitan-config FILE, --torchtitan-args, or --megatron-args with "
        "--num-layers, "
        "--hidden-size, --num-attention-heads and --vocab-size");
  }
  JobInputs in{std::move(*model), load_topology(options.topology), std::move(config), std::move(read_not_modelled)};
  if (torchtitan) settle_torchtitan_world(*torchtitan, in.config, in.topology.gpus_per_node);
  return in;
}

Topology topology_for_gpus(const Topology& topology, FsdpConfig& config) {
  if (config.gpus == 0) return topology;
  const int32_t per_node = topology.gpus_per_node;
  const auto reject = [&](const std::string& problem, const std::string& fix) {
    throw ConfigError(config.where("gpus"), "gpus", problem, fix);
  };
  // A partial last node counts as a node: its GPUs sit on NVLink together and share its NICs.
  const auto nodes = static_cast<int32_t>(ceil_div(config.gpus, per_node));
  if (config.origin.count("nodes") != 0 && config.nodes != nodes) {
    reject("gpus=" + std::to_string(config.gpus) + " and nodes=" + std::to_string(config.nodes) + " (" +
               config.where("nodes").str() + ") disagree on " + topology.name + "'s " + std::to_string(per_node) +
               "-GPU nodes",
           "set one of them");
  }
  config.nodes = nodes;
  if (config.gpus >= per_node) return topology;
  // Part of one node: its GPUs keep their NVLink, their share of the node's NICs and host links, and the whole
  // host memory (the other GPUs idle).
  Topology part = with_gpus_per_node(topology, config.gpus);
  part.nvlink_domain_gpus = config.gpus;  // the job's only domain, even on a multi-node NVLink rack
  part.name = topology.name + " (" + std::to_string(config.gpus) + " of its " + std::to_string(per_node) + " GPUs)";
  return part;
}

namespace {

// Fewer micro-batches than pipeline stages leave most stages idle most of the step. torchtitan's command line
// defaults to one (--parallelism.num_pp_microbatches), so a pipeline run written without it is mostly bubble; say so
// and name the setting of the door the job came through.
std::vector<std::string> pipeline_warnings(const JobOptions& options, const ParallelLayout& l) {
  if (l.pp <= 1 || l.micro_batches >= l.pp) return {};
  const std::string fix =
      !options.torchtitan_args.empty()
          ? "raise --parallelism.num_pp_microbatches (torchtitan's default is 1) to at least " + std::to_string(l.pp)
      : !options.torchtitan_config.empty()
          ? "raise [parallelism] pipeline_parallel_microbatches, or training.local_batch_size, to at least " +
                std::to_string(l.pp) + " micro-batches"
      : !options.megatron_args.empty()
          ? "raise --global-batch-size to at least " + std::to_string(l.pp) + " × --micro-batch-size × dp"
          : "raise global_batch_size to at least " + std::to_string(l.pp) + " × micro_batch_size × dp=" +
                std::to_string(l.dp);
  return {std::to_string(l.micro_batches) + (l.micro_batches == 1 ? " micro-batch" : " micro-batches") +
          " per step on pp=" + std::to_string(l.pp) + " pipeline stages: most of the step is pipeline bubble; " + fix};
}

}  // namespace

Job resolve_job(const JobOptions& options) {
  JobInputs in = load_job_inputs(options);
  in.topology = topology_for_gpus(in.topology, in.config);
  ParallelLayout layout = resolve_layout(in.model, in.config, in.topology.gpus_per_node);
  std::vector<std::string> warnings = pipeline_warnings(options, layout);
  return Job{std::move(in.model),  std::move(in.topology),         std::move(in.config),
             std::move(layout),    std::move(in.read_not_modelled), std::move(warnings)};
}

Schedule build_job_schedule(const ModelSpec& model, FsdpConfig& config, const Topology& topology, ScheduleCheck check,
                            BudgetRange* budgets) {
  config.fp8_recipe = resolve_fp8_recipe(config.fp8_recipe, topology.gpu.arch == GpuArch::blackwell);
  const ParallelLayout layout = resolve_layout(model, config, topology.gpus_per_node);
  BudgetRange ignored;
  Schedule s = build_schedule(model, config, layout, budgets ? budgets : &ignored);
  if (check == ScheduleCheck::validate) validate_or_throw(s, "the built schedule");
  check_group_placements(s, topology, config);  // blame the key, before the simulator meets the group
  return s;
}

Schedule build_job_schedule(const Job& job) {
  FsdpConfig config = job.config;  // already resolved: resolving again changes nothing
  return build_job_schedule(job.model, config, job.topology);
}

Schedule load_or_build_schedule(const std::string& schedule_file, const JobOptions& options, Topology* topology,
                                const std::function<void(const Job&)>& on_resolved) {
  if (schedule_file.empty()) {
    const Job job = resolve_job(options);
    if (on_resolved) on_resolved(job);
    *topology = job.topology;
    return build_job_schedule(job);
  }
  Schedule s = load_schedule(schedule_file);
  validate_or_throw(s, schedule_file);
  *topology = load_topology(options.topology);
  // A schedule for part of a node, or with a partial last node, runs on that much of the topology.
  FsdpConfig sized;
  sized.gpus = s.info.world_size;
  *topology = topology_for_gpus(*topology, sized);
  for (const auto& assignment : options.sets) {
    FsdpConfig probe;
    apply_override(probe, assignment);
    const int64_t gpus = int64_t{probe.nodes} * topology->gpus_per_node;  // both up to 2^20: int64
    if (probe.origin.count("nodes") && gpus != s.info.world_size) {
      throw ConfigError(probe.where("nodes"), "nodes",
                        "the schedule in " + schedule_file + " is for " + std::to_string(s.info.world_size) +
                            " GPUs but nodes=" + std::to_string(probe.nodes) + " gives " + std::to_string(gpus),
                        "drop --set nodes or rebuild the schedule for this node count");
    }
  }
  return s;
}

std::string layout_text(const FsdpConfig& config, const ParallelLayout& l) {
  std::string text = "dp=" + std::to_string(l.dp) + " tp=" + std::to_string(l.tp) + " cp=" + std::to_string(l.cp) +
                     " ep=" + std::to_string(l.ep) + (l.etp > 1 ? " etp=" + std::to_string(l.etp) : "") +
                     " pp=" + std::to_string(l.pp) + (l.virtual_stages > 1 ? " vp=" + std::to_string(l.virtual_stages) : "");
  text += "; " + std::to_string(l.micro_batches) + (l.micro_batches == 1 ? " micro-batch of " : " micro-batches of ") +
          std::to_string(config.micro_batch_size) + " × " + std::to_string(config.seq_length) + " tokens";
  text += "; recompute " + config_value(config, "recompute_granularity");
  if (config.recompute_granularity == Recompute::selective) text += " (" + config_value(config, "recompute_modules") + ")";
  text += "; " + config_value(config, "param_dtype") + (config.fp8_compute && config.param_dtype != DType::fp8 ? ", fp8 GEMMs" : "");
  if (config.cpu_offloading_activations) text += "; activations offloaded";
  return text;
}

}  // namespace fsdpsim
