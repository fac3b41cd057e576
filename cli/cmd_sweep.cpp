#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "cli/training_run_options.h"
#include "common/error.h"
#include "common/text.h"
#include "common/units.h"
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
  TrainingRunOptions run;
  int64_t max_gpus = 0;
  int32_t threads = 0;
  size_t top = 20;
  std::string csv, json, html;
};

RankBy rank_by(const std::string& s) {
  if (s == "cost") return RankBy::cost;
  if (s == "memory") return RankBy::memory;
  if (s == "time") return RankBy::time;
  return RankBy::throughput;
}

// Every (topology, GPU) pair the sweep's points run on, for checking --price against them.
std::vector<Topology> swept_hardware(const SweepSpec& spec) {
  std::vector<Topology> tops{spec.topology};
  for (const GridAxis& axis : spec.axes) {
    if (axis.key == kTopologyAxis) tops = axis.topologies;
  }
  for (const GridAxis& axis : spec.axes) {
    if (axis.key != kProfileAxis) continue;
    std::vector<Topology> equipped;
    for (const Topology& t : tops) {
      for (const GpuProfile& p : axis.profiles) {
        equipped.push_back(t);
        equipped.back().gpu = p;
      }
    }
    tops = std::move(equipped);
  }
  return tops;
}

// A price named for hardware no point runs on is a typo; a cost ranking with prices for some hardware and none for
// the rest would order money against GPU-seconds.
void check_prices(const SweepSpec& spec, RankBy by) {
  const std::vector<Topology> hardware = swept_hardware(spec);
  for (const auto& [name, price] : spec.prices) {
    bool used = false;
    for (const Topology& t : hardware) used = used || t.name == name || t.gpu.name == name;
    if (!used) {
      std::vector<std::string> names;
      for (const Topology& t : hardware) {
        for (const std::string& n : {t.name, t.gpu.name}) {
          if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
        }
      }
      throw ConfigError(
          SourceLocation{"<--price>", 0, 0}, "--price",
          "'" + name + "' is neither a topology nor a GPU profile of this sweep" + did_you_mean(name, names),
          "name one of: " + join(names, ", "));
    }
  }
  if (by != RankBy::cost) return;
  std::vector<std::string> unpriced;
  bool any_priced = false;
  for (const Topology& t : hardware) {
    const bool priced = point_price_per_gpu_hour(spec, t) > 0;
    any_priced = any_priced || priced;
    if (!priced) unpriced.push_back(t.name + " (" + t.gpu.name + ")");
  }
  if (any_priced && !unpriced.empty()) {
    throw ConfigError(SourceLocation{"<--price>", 0, 0}, "--price", "no price for " + join(unpriced, ", "),
                      "give --price NAME=price for it, so that every point's cost is money");
  }
}

// "dgx-h100-ndr", or the swept hardware: "dgx-h100-ndr, gb200-nvl72 × h100-sxm, h200-sxm".
std::string hardware_name(const SweepSpec& spec) {
  std::string tops = spec.topology.name, gpus;
  for (const GridAxis& axis : spec.axes) {
    if (axis.key == kTopologyAxis) tops = join(axis.values, ", ");
    if (axis.key == kProfileAxis) gpus = " × " + join(axis.values, ", ");
  }
  return tops + gpus;
}

// What the run columns rest on, and what a cost ranking means when no price was given.
std::string run_note(const SweepSpec& spec, const std::vector<SweepResult>& results, RankBy by) {
  std::string note = "goodput: no failures modelled\n";
  if (spec.run.failures_per_gpu_hour > 0) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.3g", spec.run.failures_per_gpu_hour * 1e6);
    note = std::string("goodput: ") + rate + " failures per million GPU-hours, checkpoints written at " +
           format_bandwidth(spec.run.storage_write_bytes_per_s) + " at the Young-Daly interval\n";
  }
  bool any_priced = false;
  int64_t over = 0;
  for (const SweepResult& r : results) {
    any_priced = any_priced || r.priced;
    over += r.over_budget;
  }
  if (by == RankBy::cost && !any_priced) {
    note += "no price given (--price): cost is GPU-seconds per million tokens at the goodput\n";
  }
  if (spec.max_gpus > 0) {
    note += std::to_string(over) + " points need more than --max-gpus " + std::to_string(spec.max_gpus) +
            " GPUs and rank after the others\n";
  }
  return note;
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
  cmd->add_option("--rank-by", o->rank_by,
                  "throughput (tokens/s per GPU), cost (money per token at the goodput with --price, else "
                  "GPU-seconds per token), memory, or time (the job's tokens/s at the goodput: days to train)")
      ->check(CLI::IsMember({"throughput", "cost", "memory", "time"}))
      ->capture_default_str();
  cmd->add_option("--max-gpus", o->max_gpus, "a GPU budget: points above it rank after every point within it")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  add_training_run_options(*cmd, o->run);
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
    const ParsedTrainingRun run = parse_training_run(o->run);
    spec.run = run.run;
    spec.prices = run.named_prices;
    spec.max_gpus = o->max_gpus;
    check_prices(spec, rank_by(o->rank_by));
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
    const std::string hardware = hardware_name(spec);
    std::cout << "sweep of " << total << " configurations of " << spec.model.name << " on " << hardware << ": " << valid
              << " can be built, " << fits << " fit, " << at_risk << " at risk (ranked by " << o->rank_by << ")\n"
              << compared << run_note(spec, results, rank_by(o->rank_by)) << "\n";
    std::cout << sweep_table(results, order, o->top);
    if (!o->csv.empty()) write_text_file(o->csv, sweep_csv(results, order), "--csv");
    if (!o->json.empty()) write_text_file(o->json, sweep_json(results, order), "--json");
    if (!o->html.empty()) {
      write_text_file(o->html, html_sweep_report(results, order, "sweep of " + spec.model.name + " on " + hardware),
                      "--html");
    }
  });
}

}  // namespace fsdpsim::cli
