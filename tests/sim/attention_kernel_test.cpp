// The attention kernel a job runs (attention_kernel): it reaches the schedule, survives its YAML, and the simulator
// times only the attention products with it.
#include <gtest/gtest.h>

#include "common/error.h"
#include "schedule/build/builder.h"
#include "schedule/ir/ir_yaml.h"
#include "sim/engine.h"
#include "tests/schedule/tiny_llama.h"
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

}  // namespace
}  // namespace fsdpsim
