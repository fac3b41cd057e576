// The attention kernel a job runs (attention_kernel): it reaches the schedule, survives its YAML, and the simulator
// times only the attention products with it.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "builders/builder.h"
#include "common/error.h"
#include "schedule/ir_yaml.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "tests/schedule/tiny_llama.h"
#include "topologies/attention_table.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

Schedule tiny_job(const std::vector<std::string>& sets) {
  FsdpConfig c;
  c.nodes = 1;
  for (const std::string& s : sets) apply_override(c, s);
  return build_schedule(testing::tiny_llama(4), c, 8);
}

TimeNs compute_busy_ns(const Schedule& s) {
  const RunRecord r = run_schedule(s, topology_preset("dgx-h100-ndr"), SimOptions{});
  TimeNs busy = 0;
  for (const Op& op : s.ops) {
    if (op.stream != s.compute_stream() || op.kind != OpKind::compute) continue;
    busy += r.steps.back().ops[op.id].end_ns - r.steps.back().ops[op.id].start_ns;
  }
  return busy;
}

TEST(AttentionKernel, TheTritonKernelReachesTheScheduleAndSlowsOnlyTheAttentionProducts) {
  const std::vector<std::string> job{"seq_length=8192", "micro_batch_size=1"};
  const Schedule flash = tiny_job(job);
  std::vector<std::string> triton_job = job;
  triton_job.emplace_back("attention_kernel=triton_flash");
  const Schedule triton = tiny_job(triton_job);
  EXPECT_EQ(flash.info.attention_kernel, AttentionKernel::flash);
  EXPECT_EQ(triton.info.attention_kernel, AttentionKernel::triton_flash);
  // Same ops; only the kernel differs, and the YAML keeps it.
  EXPECT_EQ(flash.ops, triton.ops);
  EXPECT_EQ(schedule_from_yaml(schedule_to_yaml(triton), "triton.yaml"), triton);
  EXPECT_EQ(schedule_to_yaml(flash).find("attention_kernel"), std::string::npos);  // the default is not written
  // Slower, by less than the 2x of its slowest direction: the other GEMMs and memory-bound work are unchanged.
  const TimeNs fast = compute_busy_ns(flash), slow = compute_busy_ns(triton);
  EXPECT_GT(slow, fast);
  EXPECT_LT(slow, 2 * fast);
}

TEST(AttentionKernel, AFusedKernelWithoutFlashAttentionIsAnError) {
  try {
    (void)tiny_job({"flash_attention=false", "attention_kernel=triton_flash"});
    FAIL() << "built";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("attention_kernel"), std::string::npos) << e.what();
  }
  try {
    (void)tiny_job({"attention_kernel=cudnn"});
    FAIL() << "built";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("triton_flash"), std::string::npos) << e.what();
  }
}

// FlashAttention-2's shares of cuDNN's rate are the published tables' own: PyTorch's FlashAttention-2 backend against
// cuDNN at the causal 8,192-token call both tables hold (an H200's batch 2 x 16 heads, a B200's batch 1 x 128).
TEST(AttentionKernel, FlashAttention2sSharesAreThePublishedTablesOwn) {
  const std::string dir = std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/";
  for (const auto& [file, arch, batch_heads] :
       {std::tuple{"h200-attention-cudnn-frontend.csv", GpuArch::hopper, int64_t{32}},
        std::tuple{"b200-attention-cudnn-frontend-sdpa.csv", GpuArch::blackwell, int64_t{128}}}) {
    const AttentionTable cudnn = load_attention_table(dir + file, "cudnn");
    const AttentionTable flash = load_attention_table(dir + file, "flash");
    for (const bool backward : {false, true}) {
      const double published =
          cudnn.flops_per_s(backward, 8192, batch_heads, 128) / flash.flops_per_s(backward, 8192, batch_heads, 128);
      EXPECT_NEAR(attention_kernel_slowdown(AttentionKernel::flash_attn2, backward, arch), published, 1e-4 * published)
          << file << " backward " << backward;
    }
  }
  // The kernel reaches the schedule and its YAML, and a Hopper step with it computes longer.
  const std::vector<std::string> job{"seq_length=8192", "micro_batch_size=1"};
  std::vector<std::string> fa2_job = job;
  fa2_job.emplace_back("attention_kernel=flash_attn2");
  const Schedule fa2 = tiny_job(fa2_job);
  EXPECT_EQ(fa2.info.attention_kernel, AttentionKernel::flash_attn2);
  EXPECT_EQ(schedule_from_yaml(schedule_to_yaml(fa2), "fa2.yaml"), fa2);
  EXPECT_GT(compute_busy_ns(fa2), compute_busy_ns(tiny_job(job)));
}

// Grouped-query attention reaches the schedule as its group size (query heads per key/value head), survives the YAML,
// and picks a measured table's rows of that group: a 4:1 model timed by a table of 1:1 and 4:1 rows computes exactly
// as long as with the 4:1 rows alone, and a multi-head model as with the 1:1 rows alone.
TEST(AttentionKernel, TheGroupedQueryShapeReachesTheScheduleAndPicksItsRowsOfATable) {
  FsdpConfig c;
  c.nodes = 1;
  apply_override(c, "seq_length=8192");
  apply_override(c, "micro_batch_size=1");
  ModelSpec gqa_model = testing::tiny_llama(4);
  gqa_model.num_kv_heads = 1;  // 4 query heads share one key/value head
  const Schedule mha = build_schedule(testing::tiny_llama(4), c, 8);
  const Schedule gqa = build_schedule(gqa_model, c, 8);
  EXPECT_EQ(mha.info.query_heads_per_kv_head, 1);
  EXPECT_EQ(gqa.info.query_heads_per_kv_head, 4);
  EXPECT_EQ(schedule_from_yaml(schedule_to_yaml(gqa), "gqa.yaml"), gqa);
  EXPECT_NE(schedule_to_yaml(gqa).find("query_heads_per_kv_head: 4"), std::string::npos);
  EXPECT_EQ(schedule_to_yaml(mha).find("query_heads_per_kv_head"), std::string::npos);  // the default is not written

  // Causal rows at head dim 64 (the tiny model's), sequence 8192, batch × heads 4: 1:1 at 100 TFLOP/s, 4:1 at 300.
  const auto table_row = [](double tflops, int kv_heads) {
    const double flops = 4.0 * 4 * 8192.0 * 8192.0 * 64 * 0.5;
    return "cudnn,1,8192,4,64,1," + std::to_string(flops / (tflops * 1e6)) + "," +
           std::to_string(2.5 * flops / (tflops * 1e6)) + "," + std::to_string(kv_heads) + "\n";
  };
  const std::string header = "kernel,batch,seq,heads,head_dim,causal,forward_us,backward_us,kv_heads\n";
  const auto busy_with = [](const Schedule& s, const std::string& csv) {
    Topology t = topology_preset("dgx-h100-ndr");
    t.gpu.attention_table = std::make_shared<const AttentionTable>(parse_attention_table_csv(csv, "t.csv", ""));
    const RunRecord r = run_schedule(s, t, SimOptions{});
    TimeNs busy = 0;
    for (const Op& op : s.ops) {
      if (op.stream != s.compute_stream() || op.kind != OpKind::compute) continue;
      busy += r.steps.back().ops[op.id].end_ns - r.steps.back().ops[op.id].start_ns;
    }
    return busy;
  };
  const std::string both = header + table_row(100, 4) + table_row(300, 1);
  EXPECT_EQ(busy_with(gqa, both), busy_with(gqa, header + table_row(300, 1)));
  EXPECT_EQ(busy_with(mha, both), busy_with(mha, header + table_row(100, 4)));
  EXPECT_LT(busy_with(gqa, both), busy_with(gqa, header + table_row(100, 4)));
}

}  // namespace
}  // namespace fsdpsim
