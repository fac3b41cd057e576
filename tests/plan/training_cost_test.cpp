// Costing a whole training run (plan/training_cost.h) and sweeping the hardware (`topology` / `profile` axes,
// prices, the GPU budget).
#include <gtest/gtest.h>

#include <array>

#include <cmath>

#include "plan/sweep.h"
#include "plan/training_cost.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

TEST(TrainingCost, CheckpointHoldsWeightsMainWeightsAndAdamMoments) {
  FsdpConfig c;  // bf16 weights, FP32 main weights, FP32 moments: 2 + 4 + 4 + 4 bytes a parameter
  EXPECT_EQ(checkpoint_bytes(c, 1000), 14000);
  c.main_params_dtype = "auto";  // no separate main weights
  c.exp_avg_dtype = DType::bf16;
  c.exp_avg_sq_dtype = DType::bf16;
  EXPECT_EQ(checkpoint_bytes(c, 1000), 6000);
}

TEST(TrainingCost, YoungDalyIntervalAndTheTimeItLoses) {
  TrainingRun run;
  run.failures_per_gpu_hour = 1e-4;     // 1,000 GPUs: 0.1 failures an hour, MTBF 36,000 s
  run.storage_write_bytes_per_s = 1e9;  // 180 GB in 180 s
  run.restart_s = 360;
  const TrainingCost c = training_cost(1000, 1000, 180'000'000'000, run);
  EXPECT_DOUBLE_EQ(c.mtbf_s, 36000);
  EXPECT_DOUBLE_EQ(c.checkpoint_write_s, 180);
  // τ = √(2 · 180 · 36,000) = 3,600 s; lost = 180/3,600 + (1,800 + 360)/36,000 = 0.05 + 0.06.
  EXPECT_NEAR(c.checkpoint_interval_s, 3600, 1e-6);
  EXPECT_NEAR(c.lost_fraction, 0.11, 1e-12);
  EXPECT_NEAR(c.goodput, 0.89, 1e-12);
}

TEST(TrainingCost, DaysGpuHoursAndMoneyAtTheGoodput) {
  TrainingRun run;
  run.failures_per_gpu_hour = 0;  // no failures: goodput 1
  run.tokens = 8.64e9;            // 1,000 GPUs × 100 tokens/s = 1e5 tokens/s: 86,400 s, one day
  run.price_per_gpu_hour = 2;
  const TrainingCost c = training_cost(1000, 100, 1, run);
  EXPECT_DOUBLE_EQ(c.goodput, 1);
  EXPECT_DOUBLE_EQ(c.days, 1);
  EXPECT_DOUBLE_EQ(c.gpu_hours, 24000);
  EXPECT_DOUBLE_EQ(c.price, 48000);
  // 1e6 tokens take 10 s on 1,000 GPUs: 10,000 GPU-seconds, 2.78 GPU-hours, 5.56 at 2 an hour.
  EXPECT_NEAR(c.price_per_million_tokens, 2.0 * 1000 * 10 / 3600, 1e-9);
}

TEST(TrainingCost, Llama3sRateGivesAboutOneInterruptionEveryThreeHoursOn16kGpus) {
  // The default rate is Llama 3's: 419 unexpected interruptions in 54 days on 16,384 GPUs.
  const TrainingCost c = training_cost(16384, 1000, 0, TrainingRun{});
  EXPECT_NEAR(c.mtbf_s / 3600, 54.0 * 24 / 419, 1e-9);  // 3.09 hours
}

TEST(TrainingCost, ACheckpointLongerThanTheMtbfLosesEverythingAndNoMore) {
  TrainingRun run;
  run.failures_per_gpu_hour = 1;  // 100 GPUs: a failure every 36 s
  run.storage_write_bytes_per_s = 1;
  const TrainingCost c = training_cost(100, 1000, 1000, run);  // a 1,000 s checkpoint
  EXPECT_DOUBLE_EQ(c.lost_fraction, 1);
  EXPECT_DOUBLE_EQ(c.goodput, 0);
  EXPECT_EQ(c.days, 0);  // never finishes: no days are claimed
}

SweepSpec llama8b_on(const std::string& topology) {
  SweepSpec spec;
  spec.model = model_preset("llama3-8b");
  spec.topology = topology_preset(topology);
  return spec;
}

TEST(HardwareSweep, TopologyAxisRunsEachPointOnItsTopology) {
  SweepSpec spec = llama8b_on("dgx-h100-ndr");
  spec.axes = {parse_grid_axis("topology=dgx-h100-ndr,hgx-h200-ndr"), parse_grid_axis("nodes=1,2")};
  ASSERT_EQ(spec.axes[0].topologies.size(), 2u);
  const auto results = run_sweep(spec);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].topology, "dgx-h100-ndr");
  EXPECT_EQ(results[0].gpu, "h100-sxm");
  EXPECT_EQ(results[3].topology, "hgx-h200-ndr");
  EXPECT_EQ(results[3].gpu, "h200-sxm");
  EXPECT_EQ(results[3].gpus, 16);
  // The same job on H200's larger HBM: the same needed memory, more of it to spare.
  EXPECT_GT(results[2].gpu_memory_bytes, results[0].gpu_memory_bytes);
}

TEST(HardwareSweep, ProfileAxisReequipsWhicheverTopologyIsSwept) {
  SweepSpec spec = llama8b_on("dgx-h100-ndr");
  // The profile axis comes first in the grid, but it is applied after the topology axis.
  spec.axes = {parse_grid_axis("profile=h200-sxm"), parse_grid_axis("topology=dgx-h100-ndr,dgx-a100-hdr")};
  const auto results = run_sweep(spec);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].gpu, "h200-sxm");
  EXPECT_EQ(results[1].gpu, "h200-sxm");
  EXPECT_EQ(results[1].topology, "dgx-a100-hdr");
  EXPECT_EQ(point_topology(spec, 1).gpu, gpu_profile("h200-sxm"));
}

TEST(HardwareSweep, MisspeltHardwareFailsBeforeAnySimulation) {
  EXPECT_NE(error_of([] { parse_grid_axis("topology=dgx-h100-ndr,hgx-h20-ndr"); }).find("did you mean 'hgx-h200-ndr'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_grid_axis("profile=h100-sxm,b300"); }).find("b300"), std::string::npos);
  EXPECT_NE(error_of([] { parse_grid_axis("topolgy=dgx-h100-ndr"); }).find("did you mean 'topology'"),
            std::string::npos);
}

TEST(HardwareSweep, PricesByTopologyThenProfileThenTheDefault) {
  SweepSpec spec = llama8b_on("dgx-h100-ndr");
  Topology h100 = topology_preset("dgx-h100-ndr");
  Topology h200 = topology_preset("hgx-h200-ndr");
  EXPECT_EQ(point_price_per_gpu_hour(spec, h100), 0);  // shipped profiles carry no price
  h200.gpu.price_per_gpu_hour = 9;                     // a profile's own price_per_gpu_hour
  EXPECT_EQ(point_price_per_gpu_hour(spec, h200), 9);
  spec.run.price_per_gpu_hour = 2;  // a plain --price overrides it
  EXPECT_EQ(point_price_per_gpu_hour(spec, h200), 2);
  spec.prices = {{"h200-sxm", 3}, {"hgx-h200-ndr", 4}};  // a named price wins; the topology's name before the GPU's
  EXPECT_EQ(point_price_per_gpu_hour(spec, h200), 4);
  EXPECT_EQ(point_price_per_gpu_hour(spec, h100), 2);
}

TEST(HardwareSweep, CostRanksCheaperHardwareFirstWhereThroughputRanksItLast) {
  // H100 and H200 run Llama-3-8B at throughputs a few percent apart (the same peak, faster HBM, their own fitted
  // clocks); with the faster one priced at twice the other it costs more per token. Throughput and cost then order
  // the two differently, which GPU-seconds alone never could.
  SweepSpec spec = llama8b_on("dgx-h100-ndr");
  spec.axes = {parse_grid_axis("topology=dgx-h100-ndr,hgx-h200-ndr")};
  const auto unpriced = run_sweep(spec);
  ASSERT_TRUE(unpriced[0].fits() && unpriced[1].fits());
  ASSERT_NE(unpriced[0].tokens_per_s_per_gpu, unpriced[1].tokens_per_s_per_gpu);
  const size_t faster = unpriced[1].tokens_per_s_per_gpu > unpriced[0].tokens_per_s_per_gpu ? 1 : 0;
  const size_t slower = 1 - faster;
  ASSERT_LT(unpriced[faster].tokens_per_s_per_gpu, 2 * unpriced[slower].tokens_per_s_per_gpu);
  const std::array<std::string, 2> names{"dgx-h100-ndr", "hgx-h200-ndr"};
  spec.prices = {{names[faster], 4}, {names[slower], 2}};
  const auto results = run_sweep(spec);
  EXPECT_TRUE(results[0].priced);
  EXPECT_EQ(rank_results(results, RankBy::throughput), (std::vector<size_t>{faster, slower}));
  EXPECT_EQ(rank_results(results, RankBy::cost), (std::vector<size_t>{slower, faster}));
  // Cost per million tokens is the price of the GPU-seconds the tokens take, over the goodput.
  const SweepResult& cheap = results[slower];
  EXPECT_NEAR(cheap.cost.price_per_million_tokens,
              2.0 * cheap.gpu_seconds_per_million_tokens / 3600 / cheap.cost.goodput, 1e-9);
}

TEST(HardwareSweep, PointsOverTheGpuBudgetRankAfterThoseWithinIt) {
  SweepSpec spec = llama8b_on("dgx-h100-ndr");
  spec.axes = {parse_grid_axis("nodes=1,4")};
  spec.max_gpus = 8;
  spec.run.tokens = 1e12;
  const auto results = run_sweep(spec);
  ASSERT_TRUE(results[0].fits() && results[1].fits());
  EXPECT_FALSE(results[0].over_budget);
  EXPECT_TRUE(results[1].over_budget);
  // 32 GPUs train the tokens sooner, but they are over the budget.
  ASSERT_LT(results[1].cost.days, results[0].cost.days);
  EXPECT_EQ(rank_results(results, RankBy::time), (std::vector<size_t>{0, 1}));
  spec.max_gpus = 0;
  const auto unbounded = run_sweep(spec);
  EXPECT_EQ(rank_results(unbounded, RankBy::time), (std::vector<size_t>{1, 0}));
  EXPECT_NE(sweep_table(results, rank_results(results, RankBy::time), 5).find("(over --max-gpus)"), std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
