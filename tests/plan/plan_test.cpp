// Sweeps, fits and OOM advice over the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "common/error.h"
#include "common/units.h"
#include "plan/advice.h"
#include "plan/fit.h"
#include "plan/sweep.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

EvaluateOptions with_margin(double margin) {
  EvaluateOptions o;
  o.memory_margin = margin;
  return o;
}

SweepSpec llama8b_spec() {
  SweepSpec spec;
  spec.model = model_preset("llama3-8b");
  spec.topology = topology_preset("dgx-h100-ndr");
  return spec;
}

TEST(Sweep, GridAxisParsing) {
  const GridAxis a = parse_grid_axis("micro_batch_size=1, 2,4");
  EXPECT_EQ(a.key, "micro_batch_size");
  EXPECT_EQ(a.values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_NE(error_of([] { parse_grid_axis("micro_batch_sise=1,2"); }).find("did you mean 'micro_batch_size'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_grid_axis("tp=1,two"); }).find("expected a whole number, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_grid_axis("tp"); }).find("expected key=value1,value2"), std::string::npos);
}

TEST(Sweep, EveryCombinationInGridOrderAndDeterministic) {
  SweepSpec spec = llama8b_spec();
  spec.axes = {parse_grid_axis("nodes=1,2"), parse_grid_axis("recompute_granularity=none,full,selective")};
  ASSERT_EQ(sweep_size(spec), 6);  // 2 × 3
  spec.threads = 1;
  const auto one = run_sweep(spec);
  spec.threads = 2;
  const auto two = run_sweep(spec);
  ASSERT_EQ(one.size(), 6u);
  // The last axis varies fastest: point 1 is nodes=1 with full recompute, point 3 nodes=2 with none.
  EXPECT_EQ(one[1].assignments, (std::vector<std::string>{"nodes=1", "recompute_granularity=full"}));
  EXPECT_EQ(one[3].assignments, (std::vector<std::string>{"nodes=2", "recompute_granularity=none"}));
  EXPECT_EQ(one[3].gpus, 16);
  // Same results whatever the thread count.
  EXPECT_EQ(sweep_json(one, rank_results(one, RankBy::throughput)),
            sweep_json(two, rank_results(two, RankBy::throughput)));
  // Full recompute runs the forward twice: slower than none on the same GPUs.
  EXPECT_GT(one[1].step_time_s, one[0].step_time_s);
}

TEST(Sweep, AValueListedTwiceIsSimulatedOnceAndCopied) {
  SweepSpec spec = llama8b_spec();
  spec.axes = {parse_grid_axis("recompute_granularity=none,full,none"), parse_grid_axis("nodes=1,2")};
  std::atomic<int> evaluated{0};
  spec.evaluate = [&](const FsdpConfig& config) {
    ++evaluated;
    return evaluate_config(spec.model, spec.topology, config, spec.evaluation);
  };
  const auto results = run_sweep(spec);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(evaluated.load(), 4);  // none and full, on 1 and 2 nodes
  EXPECT_EQ(sweep_json({results[0], results[1]}, {0, 1}), sweep_json({results[4], results[5]}, {0, 1}));
  EXPECT_EQ(results[4].assignments, (std::vector<std::string>{"recompute_granularity=none", "nodes=1"}));
}

TEST(Sweep, BudgetsThatBuildTheSameScheduleGiveWhatEachPointGivesAlone) {
  // The sweep simulates one communication budget per range of budgets that build the same schedule
  // (builders/budget_range.h) and copies its result to the others: every point must read as if simulated alone.
  SweepSpec spec = llama8b_spec();
  apply_override(spec.base, "global_batch_size=64");
  spec.axes = {parse_grid_axis("data_parallel_sharding_strategy=no_shard,optim_grads,optim_grads_params"),
               parse_grid_axis("suggested_communication_unit_size=0,100000000,200000000,1000000000,3000000000")};
  spec.threads = 2;
  const auto results = run_sweep(spec);
  ASSERT_EQ(results.size(), 15u);
  std::vector<std::string> distinct;
  for (const SweepResult& r : results) {
    SweepSpec one_point = spec;  // the same point as a sweep of one, which simulates it
    one_point.axes.clear();
    one_point.points = {r.assignments};
    SweepResult alone = run_sweep(one_point).at(0);
    EXPECT_EQ(sweep_json({r}, {0}), sweep_json({alone}, {0})) << r.assignments[0] << " " << r.assignments[1];
    alone.assignments.clear();
    const std::string figures = sweep_json({alone}, {0});
    if (std::find(distinct.begin(), distinct.end(), figures) == distinct.end()) distinct.push_back(figures);
  }
  // The budget matters to the sharded strategies (not to no_shard): the grid is not one result copied 15 times.
  EXPECT_GT(distinct.size(), 3u);
}

TEST(Sweep, EachPointShowsTheParametersOneGpuHolds) {
  // Llama-3-8B: 8,030,261,248 parameters; tp = 2 halves every matrix (the vocabulary 128,256 is a multiple of
  // 128 × 2: no padding) and replicates the 65 norms of 4,096: (8,030,261,248 − 266,240) / 2 + 266,240.
  SweepSpec spec = llama8b_spec();
  spec.axes = {parse_grid_axis("tp=1,2")};
  const auto results = run_sweep(spec);
  EXPECT_EQ(results[0].params_per_rank, 8'030'261'248);
  EXPECT_EQ(results[1].params_per_rank, (8'030'261'248 - 65 * 4'096) / 2 + 65 * 4'096);
  EXPECT_NE(sweep_table(results, rank_results(results, RankBy::throughput), 10).find("8.03B"), std::string::npos);
}

TEST(Sweep, InvalidPointsCarryTheirReason) {
  SweepSpec spec = llama8b_spec();
  spec.axes = {parse_grid_axis("tp=1,3")};  // 32 heads are not divisible by 3
  const auto results = run_sweep(spec);
  EXPECT_TRUE(results[0].valid);
  EXPECT_FALSE(results[1].valid);
  EXPECT_NE(results[1].invalid_reason.find("tp"), std::string::npos);
}

TEST(Sweep, AnUnreadableBudgetInAPlanIsThatPointsError) {
  // Plans (SweepSpec::points) are not checked when parsed as --grid values are: a budget that does not read is its
  // point's error, found while the sweep groups points by budget, and the other plan still runs.
  SweepSpec spec = llama8b_spec();
  spec.points = {{"suggested_communication_unit_size=lots"}, {"suggested_communication_unit_size=500000000"}};
  const auto results = run_sweep(spec);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].valid);
  EXPECT_NE(results[0].invalid_reason.find("suggested_communication_unit_size"), std::string::npos);
  EXPECT_TRUE(results[1].valid);
}

TEST(Sweep, APointThatThrowsIsThatPointsErrorAndTheSweepGoesOn) {
  SweepSpec spec = llama8b_spec();
  spec.axes = {parse_grid_axis("micro_batch_size=1,2,4")};
  spec.threads = 2;
  // A builder bug or a broken invariant at one point (here: micro_batch_size=2) must not end the other points'
  // threads, nor the program.
  spec.evaluate = [&spec](const FsdpConfig& config) {
    if (config.micro_batch_size == 2) throw InternalError("a broken invariant at this point");
    return evaluate_config(spec.model, spec.topology, config, spec.evaluation);
  };
  const auto results = run_sweep(spec);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].valid);
  EXPECT_TRUE(results[2].valid);
  EXPECT_FALSE(results[1].valid);
  EXPECT_EQ(results[1].assignments, (std::vector<std::string>{"micro_batch_size=2"}));
  EXPECT_NE(results[1].invalid_reason.find("error: "), std::string::npos) << results[1].invalid_reason;
  EXPECT_NE(results[1].invalid_reason.find("a broken invariant at this point"), std::string::npos);
  // The table names the failed point and its error below the ones that ran.
  const std::string table = sweep_table(results, rank_results(results, RankBy::throughput), 10);
  EXPECT_NE(table.find("micro_batch_size=2 — error: "), std::string::npos) << table;
}

TEST(Sweep, PipelinePlansAreEveryDividingPpWithBothSchedules) {
  // 64 GPUs at tp 8 leave 8: pp 2, 4 and 8, each with 1F1B and interleaving, after the plan without a pipeline.
  FsdpConfig base;
  base.tp = 8;
  const std::vector<std::vector<std::string>> plans = pipeline_plans(model_preset("llama3-70b"), base, 64);
  ASSERT_EQ(plans.size(), 7u);
  EXPECT_EQ(plans[0], (std::vector<std::string>{"pp=1"}));
  EXPECT_EQ(plans[1], (std::vector<std::string>{"pp=2", "pipeline_schedule=1f1b"}));
  EXPECT_EQ(plans[6], (std::vector<std::string>{"pp=8", "pipeline_schedule=interleaved_1f1b"}));
  // 12 GPUs leave 12 at tp 1: pp 2, 3, 4, 6, 12 (at most the 32 layers).
  EXPECT_EQ(pipeline_plans(model_preset("llama3-8b"), FsdpConfig{}, 12).size(), 11u);
  // FSDP2 also compares torchtitan's zero-bubble V at each pp.
  FsdpConfig fsdp2 = base;
  fsdp2.implementation = Implementation::fsdp2;
  const std::vector<std::vector<std::string>> fsdp2_plans = pipeline_plans(model_preset("llama3-70b"), fsdp2, 64);
  ASSERT_EQ(fsdp2_plans.size(), 10u);
  EXPECT_EQ(fsdp2_plans[3], (std::vector<std::string>{"pp=2", "pipeline_schedule=zbv"}));
  // The compared global batch: the given one, or the FSDP-only plan's one micro-batch per data-parallel rank.
  base.micro_batch_size = 2;
  EXPECT_EQ(compared_global_batch(base, 64), 16);
  base.global_batch_size = 256;
  EXPECT_EQ(compared_global_batch(base, 64), 256);
}

TEST(Sweep, PointsAreCrossedWithTheGrid) {
  SweepSpec spec = llama8b_spec();
  spec.points = {{"pp=1"}, {"pp=2", "pipeline_schedule=1f1b"}};
  spec.axes = {parse_grid_axis("micro_batch_size=1,2")};
  spec.evaluate = [](const FsdpConfig& config) {
    SweepResult r;
    r.valid = true;
    r.tokens_per_s_per_gpu = config.pp * 10.0 + static_cast<double>(config.micro_batch_size);
    return r;
  };
  ASSERT_EQ(sweep_size(spec), 4);
  const auto results = run_sweep(spec);
  EXPECT_EQ(results[0].assignments, (std::vector<std::string>{"pp=1", "micro_batch_size=1"}));
  EXPECT_EQ(results[3].assignments, (std::vector<std::string>{"pp=2", "pipeline_schedule=1f1b", "micro_batch_size=2"}));
  EXPECT_DOUBLE_EQ(results[3].tokens_per_s_per_gpu, 22.0);  // the point's and the grid's values both applied
}

TEST(Sweep, RankingPutsFittingFirstThenByTheCriterion) {
  std::vector<SweepResult> r(4);
  r[0].valid = true;  // fits, slow, cheap on memory
  r[0].memory.fit = MemoryFit::fits;
  r[0].tokens_per_s_per_gpu = 100;
  r[0].needed_bytes = 10;
  r[0].gpu_seconds_per_million_tokens = 5;
  r[1].valid = true;  // does not fit
  r[1].memory.fit = MemoryFit::out_of_memory;
  r[1].needed_bytes = 90;
  r[2].valid = false;  // cannot be built
  r[3].valid = true;   // fits, fast, needs more memory, costs more
  r[3].memory.fit = MemoryFit::fits;
  r[3].tokens_per_s_per_gpu = 200;
  r[3].needed_bytes = 50;
  r[3].gpu_seconds_per_million_tokens = 7;
  EXPECT_EQ(rank_results(r, RankBy::throughput), (std::vector<size_t>{3, 0, 1, 2}));
  EXPECT_EQ(rank_results(r, RankBy::cost), (std::vector<size_t>{0, 3, 1, 2}));
  EXPECT_EQ(rank_results(r, RankBy::memory), (std::vector<size_t>{0, 3, 1, 2}));
}

TEST(Sweep, AnAllocationThatFailedBelowTheGpusMemoryIsMarkedInTheTable) {
  // Two OOM points: one needs more than the GPU holds, the other failed an allocation while needing less
  // (fragmentation), which the table would otherwise show as an OOM beside an at-risk point needing more.
  std::vector<SweepResult> r(3);
  for (SweepResult& p : r) {
    p.valid = true;
    p.memory.gpu_memory_bytes = 80 * kGiB;
  }
  r[0].memory.fit = MemoryFit::out_of_memory;
  r[0].memory.needed_bytes = 90 * kGiB;
  r[0].memory.allocator_failed = true;
  r[1].memory.fit = MemoryFit::out_of_memory;
  r[1].memory.needed_bytes = 78 * kGiB;
  r[1].memory.allocator_failed = true;
  r[2].memory.fit = MemoryFit::at_risk;
  r[2].memory.needed_bytes = 79 * kGiB;
  EXPECT_EQ(sweep_verdict_label(r[0]), "OOM");
  EXPECT_EQ(sweep_verdict_label(r[1]), "OOM*");
  EXPECT_EQ(sweep_verdict_label(r[2]), "risk");
  const std::string table = sweep_table(r, {2, 1, 0}, 10);
  EXPECT_NE(table.find(" OOM* "), std::string::npos) << table;
  EXPECT_NE(table.find(kAllocatorFailedNote), std::string::npos) << table;
  // Without such a point, no footnote.
  EXPECT_EQ(sweep_table(r, {2, 0}, 10).find(kAllocatorFailedNote), std::string::npos);
}

TEST(Fit, SmallestGpuCountFitsAndOneNodeFewerDoesNot) {
  // Llama-3-70B at sequence 8192 with full recompute: find the fewest 8-GPU nodes with a 10% margin. Whatever the
  // answer, it must fit and one node fewer must not (the search's contract).
  FsdpConfig base;
  apply_override(base, "seq_length=8192");
  apply_override(base, "recompute_granularity=full");
  const ModelSpec model = model_preset("llama3-70b");
  const Topology topology = topology_preset("dgx-h100-ndr");
  const FitAnswer a = fit(model, topology, base, FitTarget::gpus, with_margin(0.10), 64);
  ASSERT_TRUE(a.found) << a.explanation;
  EXPECT_TRUE(a.result.fits());
  const int32_t nodes = a.result.gpus / 8;
  ASSERT_GT(nodes, 1);  // 16 B × 70.55e9 / 8 = 141 GB: one node cannot hold the sharded state
  FsdpConfig fewer = base;
  apply_override(fewer, "nodes=" + std::to_string(nodes - 1));
  EXPECT_FALSE(evaluate_config(model, topology, fewer, with_margin(0.10)).fits());
}

TEST(Fit, FindsTheTrueMinimumWhenMemoryIsNotMonotoneInTheNodeCount) {
  // A constructed memory curve over 1..8 nodes: 3 nodes fit, 4 do not (the allocator can make more GPUs need more,
  // 405B: 16 nodes 72.7 GiB against 14 nodes 71.8 GiB), 5 and more fit. Probing 1, 2, 4, 8 and bisecting between 4
  // and 8 would answer 5.
  const std::map<int32_t, int64_t> needed_gib{{1, 120}, {2, 90}, {3, 70}, {4, 78}, {5, 69}, {6, 66}, {7, 64}, {8, 62}};
  const ConfigEvaluator curve = [&](const FsdpConfig& c) {
    SweepResult r;
    r.valid = true;
    r.gpus = c.nodes * 8;
    r.memory = memory_verdict(needed_gib.at(c.nodes) << 30, int64_t{80} << 30, false, 0.05, ErrorBand{});
    r.needed_bytes = r.memory.needed_bytes;
    return r;
  };
  const FitAnswer a = fit(model_preset("llama3-8b"), topology_preset("dgx-h100-ndr"), FsdpConfig{}, FitTarget::gpus,
                          with_margin(0.05), 8, curve);
  ASSERT_TRUE(a.found);
  EXPECT_EQ(a.assignment, "nodes=3");
  EXPECT_NE(a.note.find("not monotone"), std::string::npos) << a.note;
  EXPECT_NE(a.note.find("nodes=4"), std::string::npos) << a.note;
  // Every candidate below the first fit was simulated, and the search lists them in order.
  std::vector<std::string> tried;
  for (const auto& [assignment, r] : a.tried) tried.push_back(assignment);
  EXPECT_EQ(tried, (std::vector<std::string>{"nodes=1", "nodes=2", "nodes=3", "nodes=4", "nodes=5", "nodes=6",
                                             "nodes=7", "nodes=8"}));
}

TEST(Fit, LargestMicroBatchFitsAndOneMoreDoesNot) {
  const ModelSpec model = model_preset("llama3-8b");
  const Topology topology = topology_preset("dgx-h100-ndr");
  const FitAnswer a = fit(model, topology, FsdpConfig{}, FitTarget::micro_batch_size, with_margin(0.05));
  ASSERT_TRUE(a.found) << a.explanation;
  const int64_t mbs = std::stoll(a.assignment.substr(a.assignment.find('=') + 1));
  FsdpConfig more;
  apply_override(more, "micro_batch_size=" + std::to_string(mbs + 1));
  EXPECT_FALSE(evaluate_config(model, topology, more, with_margin(0.05)).fits());
}

TEST(Advice, ListsChangesThatFitFirstFastestFirst) {
  // Llama-3-70B on 8 nodes at sequence 8192 without recompute needs ~190 GiB of activations: OOM. Full recompute
  // keeps one layer input per layer and fits.
  FsdpConfig c;
  apply_override(c, "nodes=8");
  apply_override(c, "seq_length=8192");
  const ModelSpec model = model_preset("llama3-70b");
  const Topology topology = topology_preset("dgx-h100-ndr");
  ASSERT_FALSE(evaluate_config(model, topology, c, with_margin(0.05)).fits());
  const auto advice = oom_advice(model, topology, c, with_margin(0.05));
  ASSERT_FALSE(advice.empty());
  EXPECT_TRUE(advice.front().result.fits());
  bool full_recompute_fits = false;
  for (const auto& item : advice)
    full_recompute_fits |= item.change == "recompute_granularity=full" && item.result.fits();
  EXPECT_TRUE(full_recompute_fits);
  // Each alternative says at which GPU count it was simulated: 64 for a recompute change, 128 for twice the nodes.
  const std::string text = advice_text(advice);
  EXPECT_NE(text.find(" GPUs "), std::string::npos) << text;
  for (const auto& item : advice) {
    const size_t row = text.find(item.assignments.front());
    ASSERT_NE(row, std::string::npos) << text;
    const int32_t want = item.change == "nodes=16" ? 128 : 64;
    EXPECT_EQ(item.result.gpus, want) << item.change;
    EXPECT_NE(text.substr(row, 60).find(" " + std::to_string(want) + " "), std::string::npos) << text;
  }
  for (size_t i = 1; i < advice.size(); ++i) {
    if (advice[i].result.fits()) {
      EXPECT_LE(advice[i - 1].result.step_time_s, advice[i].result.step_time_s);
    }
    if (!advice[i - 1].result.fits()) {
      EXPECT_FALSE(advice[i].result.fits());
    }
  }
}

}  // namespace
}  // namespace fsdpsim
