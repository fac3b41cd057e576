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
  double margin = 0.05;
  int32_t max_nodes = 4096;
};

}  // namespace

void register_fit(CLI::App& app) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* cmd =
      app.add_subcommand("fit", "find the fewest GPUs, the largest micro-batch or the longest sequence that fits");
  add_job_options(*cmd, o->job);
  cmd->add_option("--find", o->find, "gpus, micro_batch_size or seq_length")->capture_default_str();
  cmd->add_option("--margin", o->margin, "memory margin kept free (fraction of the GPU's memory)")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  cmd->add_option("--max-nodes", o->max_nodes, "search at most this many nodes")->capture_default_str();
  cmd->callback([o] {
    const Job job = resolve_job(o->job);
    const FitTarget target = parse_fit_target(o->find);
    const FitAnswer answer = fit(job.model, job.topology, job.config, target, o->margin, o->max_nodes);
    std::cout << fit_text(answer, job.model, job.topology, o->margin);
    if (!answer.found && target != FitTarget::gpus) {
      std::cout << advice_text(oom_advice(job.model, job.topology, job.config, o->margin));
    }
  });
}

}  // namespace fsdpsim::cli
