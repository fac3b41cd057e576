#include "cli/job.h"

#include <iostream>
#include <optional>

#include "common/error.h"
#include "schedule/megatron_args.h"

namespace fsdpsim::cli {

void add_job_options(CLI::App& command, JobOptions& options) {
  command.add_option("--model,-m", options.model, "model: a preset (see 'fsdpsim presets'), a model YAML file, or a "
                                                 "Hugging Face config.json");
  command.add_option("--topology,-t", options.topology, "topology: a preset or a topology YAML file")
      ->capture_default_str();
  command.add_option("--config,-c", options.config, "parallel/FSDP configuration YAML file");
  command.add_option("--megatron-args", options.megatron_args,
                     "a Megatron-LM command line (its parallel, FSDP and model flags are read)");
  command.add_option("--set,-s", options.sets, "override one configuration key: --set nodes=8 (repeatable)");
  command.add_flag("--print-config", options.print_config, "print the effective configuration");
}

Job resolve_job(const JobOptions& options) {
  FsdpConfig config = load_config(options.config);
  std::optional<ModelSpec> model;
  if (!options.model.empty()) model = load_model(options.model);
  if (!options.megatron_args.empty()) apply_megatron_args(options.megatron_args, config, model);
  for (const auto& assignment : options.sets) apply_override(config, assignment);
  if (!model) {
    throw ConfigError("no model: give --model PRESET|FILE, or --megatron-args with --num-layers, --hidden-size, "
                      "--num-attention-heads and --vocab-size");
  }
  Topology topology = load_topology(options.topology);
  ParallelLayout layout = resolve_layout(*model, config, topology.gpus_per_node);
  return Job{std::move(*model), std::move(topology), std::move(config), std::move(layout)};
}

void maybe_print_config(const JobOptions& options, const Job& job) {
  if (options.print_config) std::cout << config_to_yaml(job.config) << "\n";
}

}  // namespace fsdpsim::cli
