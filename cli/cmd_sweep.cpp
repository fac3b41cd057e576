#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/mpi_sweep.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "cli/sweep_print.h"
#include "cli/training_run_options.h"
#include "common/error.h"
#include "common/text.h"
#include "plan/sweep.h"
#include "plan/sweep_parts.h"

namespace fsdpsim::cli {
namespace {

struct SweepOptions {
  JobOptions job;
  std::vector<std::string> grid;
  bool compare_pp = false;
  EvaluateOptions evaluation;
  TrainingRunOptions run;
  int64_t max_gpus = 0;
  int32_t threads = 0;
  SweepOutputs outputs;
  std::string shard, part;
};

// The printed report's header (sweep_header()), which every shard's part carries.
using SweepHeader = std::map<std::string, std::string>;

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

// What is swept: the grid's axes and the pipeline plans.
void add_sweep_axes_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--grid,-g", o.grid, "key=v1,v2,... to sweep (repeatable; every combination is simulated)");
  cmd.add_flag("--compare-pp", o.compare_pp,
               "rank the configuration without pipeline parallelism against its pipeline plans (every pp that "
               "divides the GPUs, 1F1B and interleaved 1F1B) at the same GPUs and global batch; --grid crosses them");
}

// How the points are ordered.
void add_ranking_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--rank-by", o.outputs.rank_by,
                 "throughput (tokens/s per GPU), cost (money per token at the goodput with --price, else "
                 "GPU-seconds per token), memory, or time (the job's tokens/s at the goodput: days to train)")
      ->check(CLI::IsMember({"throughput", "cost", "memory", "time"}))
      ->capture_default_str();
  cmd.add_option("--max-gpus", o.max_gpus, "a GPU budget: points above it rank after every point within it")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
}

// How each point is evaluated, and on how many threads.
void add_evaluation_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--margin", o.evaluation.memory_margin,
                 "safety margin: a point needing more than (1 - margin) of the GPU's memory is 'at risk'")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  cmd.add_flag("--expandable-segments", o.evaluation.expandable_segments,
               "model PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  cmd.add_option("--threads", o.threads, "worker threads (default: all cores)");
}

// Where the ranked points go.
void add_output_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--top", o.outputs.top, "rows of the printed table")->capture_default_str();
  cmd.add_option("--csv", o.outputs.csv, "write every point, ranked, as CSV");
  cmd.add_option("--json", o.outputs.json, "write every point, ranked, as JSON");
  cmd.add_option("--html", o.outputs.html,
                 "write a self-contained HTML report (memory against throughput, Pareto front)");
}

// One shard of the grid per process, merged later by 'fsdpsim merge'.
void add_shard_options(CLI::App& cmd, SweepOptions& o) {
  cmd.add_option("--shard", o.shard,
                 "evaluate only shard i of N (every N-th point from i), e.g. a Slurm array task: "
                 "--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT; needs --part");
  cmd.add_option("--part", o.part, "with --shard: write this shard's results here for 'fsdpsim merge'");
}

// The sweep the options describe; `compared` gets the line that --compare-pp adds to the header.
SweepSpec sweep_spec(const SweepOptions& o, std::string& compared) {
  SweepSpec spec;
  JobInputs inputs = load_job_inputs(o.job);
  spec.model = std::move(inputs.model);
  spec.topology = std::move(inputs.topology);
  spec.base = std::move(inputs.config);
  if (o.grid.empty() && !o.compare_pp) {
    throw ConfigError(SourceLocation{"<sweep>", 0, 0}, "--grid", "nothing to sweep",
                      "give --grid key=v1,v2,... (repeatable), or --compare-pp to rank the pipeline plans");
  }
  for (const auto& g : o.grid) spec.axes.push_back(parse_grid_axis(g));
  if (o.compare_pp) {
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
  spec.evaluation = o.evaluation;
  spec.threads = o.threads;
  const ParsedTrainingRun run = parse_training_run(o.run);
  spec.run = run.run;
  spec.prices = run.named_prices;
  spec.max_gpus = o.max_gpus;
  return spec;
}

// --shard i/N: this process evaluates one shard and writes it as a part for 'fsdpsim merge'.
void run_sweep_shard_to_part(const SweepSpec& spec, const SweepOptions& o, const SweepHeader& header, int64_t total) {
  const auto [shard, shards] = parse_shard(o.shard);
  ProgressBar bar("sweep shard");
  SweepPart part = run_sweep_shard(spec, shard, shards, [&bar](int64_t done, int64_t n) { bar.update(done, n); });
  bar.finish();
  part.header = header;
  write_text_file(o.part, sweep_part_json(part), "--part");
  std::cout << "shard " << shard << "/" << shards << ": " << part.results.size() << " of " << total
            << " points written to " << o.part << "; merge every shard's part with 'fsdpsim merge'\n";
}

// Under mpirun: every rank evaluates its shard, and rank 0 merges and prints them all.
void run_sweep_over_mpi(SweepSpec& spec, const MpiLaunch& launch, const SweepOptions& o, const SweepHeader& header) {
  start_mpi(launch);
  // The ranks of one node share its cores.
  if (spec.threads == 0) {
    spec.threads = std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()) / launch.local_size);
  }
  SweepPart part = run_sweep_shard(spec, launch.rank, launch.size);
  part.header = header;
  const std::vector<std::string> texts = gather_texts_to_rank0(sweep_part_json(part));
  if (launch.rank != 0) return;
  std::vector<SweepPart> parts;
  std::vector<std::string> sources;
  for (size_t r = 0; r < texts.size(); ++r) {
    sources.push_back("<MPI rank " + std::to_string(r) + ">");
    parts.push_back(parse_sweep_part(texts[r], sources.back()));
  }
  print_sweep(header, merge_sweep_parts(parts, sources), o.outputs);
}

// The 'sweep' command: one shard, the ranks of an MPI job, or the whole grid here.
void run_sweep_command(const SweepOptions& o) {
  std::string compared;
  SweepSpec spec = sweep_spec(o, compared);
  const RankBy by = rank_by_name(o.outputs.rank_by);
  check_prices(spec, by);
  const int64_t total = sweep_size(spec);
  const auto header = sweep_header(spec, compared, o.outputs.rank_by);
  if (o.shard.empty() != o.part.empty()) {
    throw ConfigError(SourceLocation{"<sweep>", 0, 0}, o.shard.empty() ? "--part" : "--shard",
                      "--shard and --part go together",
                      "give both: --shard i/N --part part-i.json, then 'fsdpsim merge part-*.json'");
  }
  if (!o.shard.empty()) {
    run_sweep_shard_to_part(spec, o, header, total);
    return;
  }
  if (const auto launch = mpi_launch_from_environment()) {
    run_sweep_over_mpi(spec, *launch, o, header);
    return;
  }
  ProgressBar bar("sweep");
  const std::vector<SweepResult> results = run_sweep(spec, [&bar](int64_t done, int64_t n) { bar.update(done, n); });
  bar.finish();
  print_sweep(header, results, o.outputs);
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "simulate every combination of configuration values and rank them");
  add_job_options(*cmd, o->job);
  add_sweep_axes_options(*cmd, *o);
  add_ranking_options(*cmd, *o);
  add_training_run_options(*cmd, o->run);
  add_evaluation_options(*cmd, *o);
  add_output_options(*cmd, *o);
  add_shard_options(*cmd, *o);
  cmd->callback([o] { run_sweep_command(*o); });
}

}  // namespace fsdpsim::cli
