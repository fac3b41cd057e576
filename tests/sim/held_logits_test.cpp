// loop_holds_logits: a training loop that still references the model's output (`pred`) during backward keeps one
// micro-batch's fp32 logits alive until the next forward replaces them or the optimizer step ends (torchtitan before
// PR #391, 2024-06-12, whose description counts the 3.9 GiB this costs on Llama 3 8B).
#include <gtest/gtest.h>

#include <algorithm>

#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"
#include "tests/support/job_of.h"

namespace fsdpsim {
namespace {

// Llama 3 8B under eager FSDP2 (fused_elementwise=false: the eager fp32 loss) on one DGX H100 node, 2,048 tokens per
// micro-batch and two micro-batches per step (16 sequences over 8 ranks); full recompute puts the peak in the loss's
// backward.
std::vector<std::string> eager_llama(bool held) {
  return {"implementation=fsdp2",   "fused_elementwise=false",        "seq_length=2048",
          "micro_batch_size=1",     "global_batch_size=16",           "recompute_granularity=full",
          "nodes=1",                std::string("loop_holds_logits=") + (held ? "true" : "false")};
}

Job job(const std::vector<std::string>& sets) {
  return testing::job_of("llama3-8b", "dgx-h100-ndr", sets);
}

Report simulate(const Job& j) {
  const Schedule s = build_job_schedule(j);
  return make_report(s, j.topology, run_schedule(s, j.topology, SimOptions{}));
}

const Op* freeing_op(const Schedule& s, const std::string& buffer_name) {
  const auto b = std::find_if(s.buffers.begin(), s.buffers.end(), [&](const Buffer& x) { return x.name == buffer_name; });
  EXPECT_NE(b, s.buffers.end()) << buffer_name;
  if (b == s.buffers.end()) return nullptr;
  const BufferId id(static_cast<int32_t>(b - s.buffers.begin()));
  for (const Op& op : s.ops) {
    if (std::find(op.frees.begin(), op.frees.end(), id) != op.frees.end()) return &op;
  }
  return nullptr;
}

TEST(LoopHoldsLogits, ThePeakGrowsByOneMicroBatchOfFp32Logits) {
  const Report freed = simulate(job(eager_llama(false)));
  const Report held = simulate(job(eager_llama(true)));
  // Both peak in the last micro-batch's loss backward, where the held tensor is that micro-batch's fp32 logits:
  // 2,048 tokens × 128,256 vocabulary × 4 bytes = 1,050,673,152 B. The first micro-batch's copy is gone by then.
  EXPECT_EQ(freed.peak_op, "bwd.output.mb1");
  EXPECT_EQ(held.peak_op, "bwd.output.mb1");
  EXPECT_EQ(held.peak_allocated_bytes - freed.peak_allocated_bytes, 2048LL * 128'256 * 4);
}

TEST(LoopHoldsLogits, TheNextForwardOrTheOptimizerFreesThem) {
  const Schedule s = build_job_schedule(job(eager_llama(true)));
  const Op* first = freeing_op(s, "logits_held.output.mb0");
  const Op* last = freeing_op(s, "logits_held.output.mb1");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(first->name, "fwd.output.mb1");  // `pred = model(x)` rebinds once the new logits exist
  EXPECT_EQ(last->kind, OpKind::optimizer);
}

TEST(LoopHoldsLogits, RefusedWhereTheLossReceivesNoLogits) {
  std::vector<std::string> sets = eager_llama(true);
  sets.push_back("loss_implementation=cut_cross_entropy");
  const std::string message = error_of([&] { (void)build_job_schedule(job(sets)); });
  EXPECT_HAS(message, "loop_holds_logits");
  EXPECT_HAS(message, "eager_fp32 or chunked");
}

}  // namespace
}  // namespace fsdpsim
