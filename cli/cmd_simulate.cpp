#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/measured_tables.h"
#include "cli/output.h"
#include "common/error.h"
#include "common/pickle.h"
#include "plan/advice.h"
#include "plan/html_report.h"
#include "plan/rank_differences.h"
#include "report/memory_snapshot.h"
#include "report/profiler_trace.h"
#include "report/report.h"
#include "sim/engine.h"

namespace fsdpsim::cli {
namespace {

struct SimulateOptions {
  JobOptions job;
  std::string schedule_file;
  std::string profile;
  MeasuredTableOptions tables;
  std::string json;
  std::string trace;
  std::string html;
  std::string memory_snapshot;
  std::string profiler_trace;
  int32_t steps = 2;
  bool expandable_segments = false;
  bool no_advice = false;
  double margin = 0.05;
};

// What the report takes from the resolved job; all empty when the schedule comes from a file.
struct JobNotes {
  std::optional<FsdpConfig> config;  ///< the resolved configuration, for the HTML report
  std::vector<std::string> read_not_modelled;
  std::string layout;
  std::vector<std::string> warnings;
};

void run_simulate(const SimulateOptions& o) {
  Topology topology;
  JobNotes notes;
  const Schedule schedule = load_or_build_schedule(o.schedule_file, o.job, &topology, [&](const Job& job) {
    maybe_print_config(o.job, job);
    notes = JobNotes{job.config, job.read_not_modelled, layout_text(job.config, job.layout), job.warnings};
  });
  const std::optional<FsdpConfig>& config = notes.config;
  if (!o.profile.empty()) topology.gpu = load_gpu_profile(o.profile);
  attach_measured_tables(o.tables, topology.gpu);
  SimOptions sim;
  sim.steps = o.steps;
  sim.expandable_segments = o.expandable_segments;
  sim.record_timeline = true;
  sim.allocator_capacity_bytes = 0;
  if (config) sim.straggler = straggler_of(*config);
  RunRecord run;
  Report report = pool_report(schedule, topology, sim, ReportDetail::full, o.margin, &run);
  report.straggler_cost_s = straggler_cost_s(schedule, topology, sim, report.step_time_s);
  report.read_not_modelled = notes.read_not_modelled;
  report.layout = notes.layout;
  report.warnings = notes.warnings;
  report.measured_tables = measured_table_lines(topology.gpu, schedule.info.query_heads_per_kv_head);
  std::cout << report_text(report);
  std::vector<AdviceItem> advice;
  if (report.oom && !o.no_advice && o.schedule_file.empty()) {
    // What would make it fit: each single change simulated (the job's own inputs, so only when it was built).
    const JobInputs inputs = load_job_inputs(o.job);
    EvaluateOptions evaluation;
    evaluation.memory_margin = o.margin;
    evaluation.steps = o.steps;
    evaluation.expandable_segments = o.expandable_segments;
    advice = oom_advice(inputs.model, topology, inputs.config, evaluation);
    std::cout << advice_text(advice);
  }
  if (!o.json.empty()) write_text_file(o.json, report_json(report), "--json");
  if (!o.trace.empty()) write_text_file(o.trace, chrome_trace(schedule, run), "--trace");
  if (!o.memory_snapshot.empty()) {
    write_text_file(o.memory_snapshot, write_pickle(predicted_memory_snapshot(schedule, run)),
                    "--memory-snapshot");
  }
  if (!o.profiler_trace.empty()) {
    write_text_file(o.profiler_trace, predicted_profiler_trace(schedule, run), "--profiler-trace");
  }
  if (!o.html.empty())
    write_text_file(o.html, html_run_report(schedule, run, report, advice, config ? &*config : nullptr),
                    "--html");
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "predict step time and the memory timeline of one rank");
  add_job_options(*cmd, options->job);
  cmd->add_option("--schedule", options->schedule_file, "simulate this schedule IR file instead of building one");
  cmd->add_option("--profile", options->profile,
                  "GPU hardware profile (preset or YAML, e.g. from 'fsdpsim calibrate')");
  add_measured_table_options(*cmd, options->tables);
  cmd->add_option("--json", options->json, "write the report as JSON to this file");
  cmd->add_option("--trace", options->trace, "write a Chrome-trace JSON (open in Perfetto) to this file");
  cmd->add_option("--steps", options->steps, "steps to simulate; the last is the steady state")
      ->check(CLI::Range(2, 100))
      ->capture_default_str();
  cmd->add_flag("--expandable-segments", options->expandable_segments,
                "model PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  cmd->add_option("--html", options->html, "write a self-contained HTML report (timeline, memory, advice)");
  cmd->add_option("--memory-snapshot", options->memory_snapshot,
                  "write the predicted steady step as a PyTorch CUDA memory snapshot (pickle; open it in "
                  "pytorch.org/memory_viz or torch/cuda/_memory_viz.py)");
  cmd->add_option("--profiler-trace", options->profiler_trace,
                  "write the predicted steps as a PyTorch profiler trace (kernels, NCCL metadata, unit ranges), to "
                  "open beside a real one or read back with 'validate --measured-trace'");
  cmd->add_flag("--no-advice", options->no_advice, "do not simulate what would make an OOM configuration fit");
  cmd->add_option("--margin", options->margin,
                  "safety margin: needing more than (1 - margin) of the GPU's memory is 'at risk'")
      ->capture_default_str();
  cmd->callback([options] { run_simulate(*options); });
}

}  // namespace fsdpsim::cli
