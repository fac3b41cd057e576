#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "common/error.h"
#include "plan/html_report.h"
#include "plan/sweep.h"

namespace fsdpsim::cli {
namespace {

struct SweepOptions {
  JobOptions job;
  std::vector<std::string> grid;
  bool compare_pp = false;
  std::string rank_by = "throughput";
  EvaluateOptions evaluation;
  int32_t threads = 0;
  size_t top = 20;
  std::string csv, json, html;
};

RankBy rank_by(const std::string& s) {
  if (s == "cost") return RankBy::cost;
  if (s == "memory") return RankBy::memory;
  return RankBy::throughput;
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "simulate every combination of configuration values and rank them");
  add_job_options(*cmd, o->job);
  cmd->add_option("--grid,-g", o->grid, "key=v1,v2,... to sweep (repeatable; every combination is simulated)");
  cmd->add_flag("--compare-pp", o->compare_pp,
                "rank the configuration without pipeline parallelism against its pipeline plans (every pp that "
                "divides the GPUs, 1F1B and interleaved 1F1B) at the same GPUs and global batch; --grid crosses them");
  cmd->add_option("--rank-by", o->rank_by, "throughput (tokens/s per GPU), cost (GPU-seconds per token) or memory")
      ->check(CLI::IsMember({"throughput", "cost", "memory"}))
      ->capture_default_str();
  cmd->add_option("--margin", o->evaluation.memory_margin,
                  "safety margin: a point needing more than (1 - margin) of the GPU's memory is 'at risk'")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  cmd->add_flag("--expandable-segments", o->evaluation.expandable_segments,
                "model PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  cmd->add_option("--threads", o->threads, "worker threads (default: all cores)");
  cmd->add_option("--top", o->top, "rows of the printed table")->capture_default_str();
  cmd->add_option("--csv", o->csv, "write every point, ranked, as CSV");
  cmd->add_option("--json", o->json, "write every point, ranked, as JSON");
  cmd->add_option("--html", o->html, "write a self-contained HTML report (memory against throughput, Pareto front)");
  cmd->callback([o] {
    SweepSpec spec;
    JobInputs inputs = load_job_inputs(o->job);
    spec.model = std::move(inputs.model);
    spec.topology = std::move(inputs.topology);
    spec.base = std::move(inputs.config);
    if (o->grid.empty() && !o->compare_pp) {
      throw ConfigError(SourceLocation{"<sweep>", 0, 0}, "--grid", "nothing to sweep",
                        "give --grid key=v1,v2,... (repeatable), or --compare-pp to rank the pipeline plans");
    }
    for (const auto& g : o->grid) spec.axes.push_back(parse_grid_axis(g));
    std::string compared;
    if (o->compare_pp) {
      const int64_t world =
          spec.base.gpus > 0 ? int64_t{spec.base.gpus} : int64_t{spec.base.nodes} * spec.topology.gpus_per_node;
      const int64_t global = compared_global_batch(spec.base, world);
      if (spec.base.global_batch_size == 0) {
        apply_override(spec.base, "global_batch_size=" + std::to_string(global), "--compare-pp");
      }
      spec.points = pipeline_plans(spec.model, spec.base, world);
      compared = "every plan runs " + std::to_string(world) + " GPUs and a global batch of " + std::to_string(global) +
                 " sequences\n";
    }
    spec.evaluation = o->evaluation;
    spec.threads = o->threads;
    const int64_t total = sweep_size(spec);
    if (total > 1'000'000)
      throw ConfigError("the grid has " + std::to_string(total) + " points; at most 1,000,000 are allowed");
    ProgressBar bar("sweep");
    const std::vector<SweepResult> results = run_sweep(spec, [&bar](int64_t done, int64_t n) { bar.update(done, n); });
    bar.finish();
    const std::vector<size_t> order = rank_results(results, rank_by(o->rank_by));
    int64_t fits = 0, at_risk = 0, valid = 0;
    for (const auto& r : results) {
      valid += r.valid;
      fits += r.valid && r.memory.fit == MemoryFit::fits;
      at_risk += r.valid && r.memory.fit == MemoryFit::at_risk;
    }
    std::cout << "sweep of " << total << " configurations of " << spec.model.name << " on " << spec.topology.name
              << ": " << valid << " can be built, " << fits << " fit, " << at_risk << " at risk (ranked by "
              << o->rank_by << ")\n"
              << compared << "\n";
    std::cout << sweep_table(results, order, o->top);
    if (!o->csv.empty()) write_text_file(o->csv, sweep_csv(results, order), "--csv");
    if (!o->json.empty()) write_text_file(o->json, sweep_json(results, order), "--json");
    if (!o->html.empty()) {
      write_text_file(o->html,
                      html_sweep_report(results, order, "sweep of " + spec.model.name + " on " + spec.topology.name),
                      "--html");
    }
  });
}

}  // namespace fsdpsim::cli
