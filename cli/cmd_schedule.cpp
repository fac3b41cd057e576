#include <fstream>
#include <iostream>
#include <memory>

#include "builders/builder.h"
#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/output.h"
#include "cli/yaml_as_json.h"
#include "common/error.h"
#include "schedule/ir_yaml.h"
#include "schedule/summary.h"
#include "schedule/validate.h"

namespace fsdpsim::cli {
namespace {

struct ScheduleOptions {
  JobOptions job;
  std::string output;
  std::string json;
};

}  // namespace

void register_schedule(CLI::App& app) {
  auto options = std::make_shared<ScheduleOptions>();
  CLI::App* cmd = app.add_subcommand("schedule", "build the schedule IR of one step, validate it, print its summary");
  add_job_options(*cmd, options->job);
  cmd->add_option("-o,--output", options->output, "write the IR as YAML to this file");
  cmd->add_option("--json", options->json, "write the IR as JSON (the YAML's structure) to this file");
  cmd->callback([options] {
    const Job job = resolve_job(options->job);
    maybe_print_config(options->job, job);
    const Schedule schedule = build_schedule(job.model, job.config, job.layout);
    validate_or_throw(schedule, "the built schedule");
    if (!options->output.empty() || !options->json.empty()) {
      const std::string yaml = schedule_to_yaml(schedule);
      if (!options->output.empty()) write_text_file(options->output, yaml, "-o");
      if (!options->json.empty()) write_text_file(options->json, yaml_as_json(yaml), "--json");
    }
    std::cout << schedule_summary(schedule);
    std::cout << "topology: " << job.topology.name << " (" << job.layout.world_size << " GPUs = " << job.config.nodes
              << " nodes × " << job.topology.gpus_per_node << ")";
    if (!options->output.empty()) std::cout << "; IR written to " << options->output;
    std::cout << "\n";
  });
}

}  // namespace fsdpsim::cli
