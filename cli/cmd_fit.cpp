#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/output.h"
#include "plan/advice.h"
#include "plan/fit.h"

namespace fsdpsim::cli {
namespace {

struct FitOptions {
  JobOptions job;
  std::string find = "gpus";
  EvaluateOptions evaluation;
  int32_t max_nodes = 4096;
  std::string json;
};

}  // namespace

void register_fit(CLI::App& app) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* cmd =
      app.add_subcommand("fit", "find the fewest GPUs, the largest micro-batch or the longest sequence that fits");
  add_job_options(*cmd, o->job);
  cmd->add_option("--find", o->find, "gpus, micro_batch_size or seq_length")->capture_default_str();
  cmd->add_option("--margin", o->evaluation.memory_margin,
                  "safety margin: needing more than (1 - margin) of the GPU's memory is 'at risk', not a fit")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  cmd->add_option("--max-nodes", o->max_nodes, "search at most this many nodes")->capture_default_str();
  cmd->add_flag("--expandable-segments", o->evaluation.expandable_segments,
                "model PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  cmd->add_option("--json", o->json, "write the answer and every configuration tried as JSON to this file");
  cmd->callback([o] {
    const Job job = resolve_job(o->job);
    const FitTarget target = parse_fit_target(o->find);
    const FitAnswer answer = fit(job.model, job.topology, job.config, target, o->evaluation, o->max_nodes);
    std::cout << fit_text(answer, job.model, job.topology, o->evaluation);
    if (!o->json.empty()) write_text_file(o->json, fit_json(answer), "--json");
    if (!answer.found) {
      // As simulate does after an OOM verdict: what would make the closest configuration tried fit.
      FsdpConfig closest = job.config;
      if (!answer.result.assignments.empty()) apply_override(closest, answer.result.assignments.front(), "fit");
      std::cout << advice_text(oom_advice(job.model, job.topology, closest, o->evaluation));
    }
  });
}

}  // namespace fsdpsim::cli
