#include "cli/job_options.h"

#include <iostream>

namespace fsdpsim::cli {

void add_job_options(CLI::App& command, JobOptions& options) {
  command.add_option("--model,-m", options.model,
                     "model: a preset (see 'fsdpsim presets'), a model YAML file, or a "
                     "Hugging Face config.json");
  command.add_option("--topology,-t", options.topology, "topology: a preset or a topology YAML file")
      ->capture_default_str();
  command.add_option("--config,-c", options.config, "parallel/FSDP configuration YAML file");
  command.add_option("--megatron-args", options.megatron_args,
                     "a Megatron-LM command line (its parallel, FSDP and model flags are read)");
  command.add_option("--torchtitan-config", options.torchtitan_config,
                     "a torchtitan job TOML (its [model] flavor, [parallelism], [training], [activation_checkpoint], "
                     "[compile] and float8/MX converters are read)");
  command.add_option("--torchtitan-args", options.torchtitan_args,
                     "a torchtitan command line (--module M --config F and its --section.option flags, as torchtitan "
                     "runs jobs since its configurations moved into Python; NGPU= or torchrun's --nnodes and "
                     "--nproc_per_node give the GPUs)");
  command.add_option("--set,-s", options.sets, "override one configuration key: --set nodes=8 (repeatable)");
  command.add_flag("--print-config", options.print_config, "print the effective configuration");
}

void maybe_print_config(const JobOptions& options, const Job& job) {
  if (options.print_config) std::cout << config_to_yaml(job.config) << "\n";
}

Schedule load_or_build_schedule_for_cli(const std::string& schedule_file, const JobOptions& options, Topology* topology,
                                        std::vector<std::string>* read_not_modelled) {
  return load_or_build_schedule(schedule_file, options, topology, [&](const Job& job) {
    maybe_print_config(options, job);
    if (read_not_modelled) *read_not_modelled = job.read_not_modelled;
  });
}

}  // namespace fsdpsim::cli
