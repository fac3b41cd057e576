// Ranks that differ (issue 13, items 3 and 4): MoE routing skew and stragglers make the simulated rank the busiest
// expert-parallel rank or a slow one; a mixed pool of GPUs is paced by its slowest kind and limited by the memory of
// the kind with the least to spare. The report and the verdict say which.
#include <gtest/gtest.h>

#include <algorithm>

#include "job/job.h"
#include "plan/rank_differences.h"
#include "report/report.h"
#include "schedule/ir_yaml.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"
#include "tests/support/job_of.h"

namespace fsdpsim {
namespace {

Job job(const std::string& model, const std::vector<std::string>& sets) {
  return testing::job_of(model, "dgx-h100-ndr", sets);
}

const Buffer& buffer_named(const Schedule& s, const std::string& name) {
  const auto it = std::find_if(s.buffers.begin(), s.buffers.end(), [&](const Buffer& b) { return b.name == name; });
  EXPECT_NE(it, s.buffers.end()) << name;
  return *it;
}

const Op& op_named(const Schedule& s, const std::string& name) {
  const auto it = std::find_if(s.ops.begin(), s.ops.end(), [&](const Op& op) { return op.name == name; });
  EXPECT_NE(it, s.ops.end()) << name;
  return *it;
}

Report simulate(const Job& j, SimOptions options = {}) {
  const Schedule s = build_job_schedule(j);
  return make_report(s, j.topology, run_schedule(s, j.topology, options));
}

// Mixtral-8x7B (hidden 4,096, experts of width 14,336, top-2) at 4,096 tokens per micro-batch, tp = 1, ep = 8 over
// two DGX H100 nodes. Each rank routes 4,096 × 2 = 8,192 token copies; balanced, its experts receive as many; the
// busiest rank of a 1.5 skew receives 12,288.
const std::vector<std::string> kMixtral{"nodes=2", "ep=8", "seq_length=4096", "micro_batch_size=1"};

std::vector<std::string> with(std::vector<std::string> sets, const std::string& extra) {
  sets.push_back(extra);
  return sets;
}

TEST(MoeRoutingSkew, TheBusiestRanksBytesByHand) {
  const Schedule balanced = build_job_schedule(job("mixtral-8x7b", kMixtral));
  const Schedule skewed = build_job_schedule(job("mixtral-8x7b", with(kMixtral, "moe_routing_skew=1.5")));
  // The dispatch all-to-all carries the received copies: 12,288 × 4,096 hidden × 2 bytes = 100,663,296 B (64 MiB
  // balanced: 8,192 copies).
  EXPECT_EQ(collective_size_bytes(op_named(balanced, "ep_dispatch.layer.0.mb0")), 8192LL * 4096 * 2);
  EXPECT_EQ(collective_size_bytes(op_named(skewed, "ep_dispatch.layer.0.mb0")), 12288LL * 4096 * 2);
  // A layer's saved activations grow by the 4,096 extra token-expert pairs: their dispatched tokens (4,096 × 4,096
  // × 2 = 33,554,432 B) and their expert intermediates, gate, up and activation output at width 14,336 (3 × 4,096 ×
  // 14,336 × 2 = 352,321,536 B): 385,875,968 B (368 MiB) per layer, 32 layers.
  const int64_t extra =
      buffer_named(skewed, "act.layer.0.mb0").size_bytes - buffer_named(balanced, "act.layer.0.mb0").size_bytes;
  EXPECT_EQ(extra, 4096LL * 4096 * 2 + 3LL * 4096 * 14336 * 2);
  EXPECT_EQ(extra, 385'875'968);
  // MFU counts the mean rank's FLOPs, not the busiest one's.
  EXPECT_EQ(skewed.info.model_flops_per_gpu, balanced.info.model_flops_per_gpu);
  EXPECT_EQ(skewed.info.moe_routing_skew, 1.5);
}

TEST(MoeRoutingSkew, MoreMemoryALongerStepAndAVerdictThatNamesTheRank) {
  const Report balanced = simulate(job("mixtral-8x7b", kMixtral));
  const Report skewed = simulate(job("mixtral-8x7b", with(kMixtral, "moe_routing_skew=1.5")));
  // The peak falls in the first backward layer, with every layer's saved activations still held: at least the 32
  // layers' 385,875,968 extra bytes each (derived above), plus the larger all-to-all workspace.
  EXPECT_GE(skewed.peak_allocated_bytes - balanced.peak_allocated_bytes, 32 * 385'875'968LL);
  EXPECT_GT(skewed.step_time_s, balanced.step_time_s);
  EXPECT_TRUE(balanced.simulated_rank.empty());
  EXPECT_NE(skewed.simulated_rank.find("the busiest expert-parallel rank (1.5× the mean"), std::string::npos);
  const std::string verdict = verdict_text(skewed.memory);
  EXPECT_NE(verdict.find(" on the busiest expert-parallel rank"), std::string::npos) << verdict;
  EXPECT_NE(report_json(skewed).find("\"simulated_rank\""), std::string::npos);
}

TEST(MoeRoutingSkew, TheIrKeepsTheSkew) {
  const Schedule skewed = build_job_schedule(job("mixtral-8x7b", with(kMixtral, "moe_routing_skew=1.25")));
  const Schedule back = schedule_from_yaml(schedule_to_yaml(skewed), "skewed.yaml");
  EXPECT_EQ(back.info.moe_routing_skew, 1.25);
  const Schedule balanced = build_job_schedule(job("mixtral-8x7b", kMixtral));
  EXPECT_EQ(schedule_to_yaml(balanced).find("moe_routing_skew"), std::string::npos);  // files stay as they were
}

TEST(MoeRoutingSkew, ASkewWithNothingToSkewIsRefused) {
  EXPECT_NE(error_of([] {
              (void)build_job_schedule(job("llama3-8b", {"moe_routing_skew=1.5"}));
            }).find("has no experts to route to"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              (void)build_job_schedule(job("mixtral-8x7b", {"nodes=2", "moe_routing_skew=1.5"}));
            }).find("needs expert parallelism, but ep=1"),
            std::string::npos);
  const std::string beyond =
      error_of([] { (void)build_job_schedule(job("mixtral-8x7b", with(kMixtral, "moe_routing_skew=9"))); });
  EXPECT_NE(beyond.find("at most the tokens of all ep=8 ranks, not 9× the mean"), std::string::npos) << beyond;
  EXPECT_NE(error_of([] { (void)job("mixtral-8x7b", {"moe_routing_skew=0.5"}); }).find("moe_routing_skew"),
            std::string::npos);
}

TEST(Stragglers, ASlowGpuSetsThePaceAndTheReportSaysWhatItCosts) {
  const Job j = job("llama3-8b", {"nodes=2", "straggler_compute_slowdown=1.25"});
  const Schedule s = build_job_schedule(j);
  SimOptions options;
  options.straggler = straggler_of(j.config);
  const Report slow = make_report(s, j.topology, run_schedule(s, j.topology, options));
  const Report even = make_report(s, j.topology, run_schedule(s, j.topology, SimOptions{}));
  EXPECT_GT(slow.step_time_s, even.step_time_s);
  // Compute is most of this step, so a quarter slower compute costs nearly a quarter more, never more than that.
  EXPECT_LE(slow.step_time_s, 1.25 * even.step_time_s + 1e-9);
  EXPECT_GT(slow.step_time_s, 1.15 * even.step_time_s);
  EXPECT_NEAR(straggler_cost_s(s, j.topology, options, slow.step_time_s), slow.step_time_s - even.step_time_s, 1e-12);
  EXPECT_NE(slow.simulated_rank.find("a straggler (compute 1.25× slower)"), std::string::npos) << slow.simulated_rank;
  // MFU is against the nominal GPU: the same FLOPs over a longer step.
  EXPECT_LT(slow.mfu, even.mfu);
}

TEST(Stragglers, ASlowNicCostsOnlyWhatCrossesTheNetwork) {
  // One node: no collective crosses a NIC, so a slow one costs nothing.
  const Job one = job("llama3-8b", {"nodes=1", "straggler_nic_slowdown=4"});
  const Schedule s1 = build_job_schedule(one);
  SimOptions options;
  options.straggler = straggler_of(one.config);
  const double step1 = make_report(s1, one.topology, run_schedule(s1, one.topology, options)).step_time_s;
  EXPECT_DOUBLE_EQ(straggler_cost_s(s1, one.topology, options, step1), 0.0);
  // Eight nodes with tp=8: the data-parallel collectives cross the network at a quarter of the rate.
  const Job eight = job("llama3-70b", {"nodes=8", "tp=8", "straggler_nic_slowdown=4"});
  const Schedule s8 = build_job_schedule(eight);
  options.straggler = straggler_of(eight.config);
  const double step8 = make_report(s8, eight.topology, run_schedule(s8, eight.topology, options)).step_time_s;
  EXPECT_GT(straggler_cost_s(s8, eight.topology, options, step8), 0.0);
}

// HGX H200 nodes beside DGX H100 ones: the same node and network shape, two GPUs.
constexpr const char* kMixedPool = R"(name: mixed-h200-h100
description: HGX H200 nodes beside H100 ones
gpu: h200-sxm
mixed_gpus: [h100-sxm]
gpus_per_node: 8
nvlink_domain_gpus: 8
nvlink_bw: 450GB/s
nics_per_node: 8
nic_bw: 400Gb/s
host_bw: 64GB/s
)";

TEST(MixedPool, TheSlowestKindPacesAndTheTightestKindDecidesTheFit) {
  const Topology pool = parse_topology_yaml(kMixedPool, "pool.yaml");
  ASSERT_EQ(pool.mixed_gpus.size(), 1u);
  EXPECT_EQ(parse_topology_yaml(topology_to_yaml(pool), "again.yaml"), pool);
  const std::vector<Topology> kinds = topologies_per_gpu_kind(pool);
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].gpu.name, "h200-sxm");
  EXPECT_EQ(kinds[1].gpu.name, "h100-sxm");

  JobOptions options;
  options.model = "llama3-70b";
  options.sets = {"nodes=4"};
  const Job j = resolve_job(options);
  const Schedule s = build_job_schedule(j);
  const Report h200 = make_report(s, kinds[0], run_schedule(s, kinds[0], SimOptions{}));
  const Report h100 = make_report(s, kinds[1], run_schedule(s, kinds[1], SimOptions{}));
  const Report mixed = pool_report(s, pool, SimOptions{}, ReportDetail::full, kDefaultMemoryMargin);
  EXPECT_DOUBLE_EQ(mixed.step_time_s, std::max(h200.step_time_s, h100.step_time_s));
  // 70B on 32 GPUs needs about 130 GiB: it fits an H200's 141 GB, not an H100's 80 GB, so the pool does not fit.
  EXPECT_EQ(h100.memory.fit, MemoryFit::out_of_memory);
  EXPECT_NE(h200.memory.fit, MemoryFit::out_of_memory);
  EXPECT_EQ(mixed.memory.fit, MemoryFit::out_of_memory);
  EXPECT_EQ(mixed.memory.needed_bytes, h100.memory.needed_bytes);
  EXPECT_EQ(mixed.gpu, "h200-sxm + h100-sxm");
  EXPECT_NE(verdict_text(mixed.memory).find("OUT OF MEMORY on the h100-sxm GPUs"), std::string::npos)
      << verdict_text(mixed.memory);
  // A pool of one kind is the plain report.
  const Report alone = pool_report(s, kinds[1], SimOptions{}, ReportDetail::full, kDefaultMemoryMargin);
  EXPECT_EQ(report_json(alone), report_json(h100));
}

TEST(MixedPool, BadPoolsAreNamed) {
  const std::string base = std::string(kMixedPool);
  std::string typo = base;
  typo.replace(typo.find("[h100-sxm]"), 10, "[h100-sxn]");
  const std::string unknown = error_of([&] { (void)parse_topology_yaml(typo, "pool.yaml"); });
  EXPECT_NE(unknown.find("pool.yaml:4"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown GPU profile 'h100-sxn' (did you mean 'h100-sxm'?)"), std::string::npos) << unknown;
  std::string scalar = base;
  scalar.replace(scalar.find("[h100-sxm]"), 10, "h100-sxm");
  EXPECT_NE(error_of([&] { (void)parse_topology_yaml(scalar, "pool.yaml"); }).find("expected a list"),
            std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
