// train_metric_cross_entropies: Composer's trainer (llm-foundry's MPT) keeps the model's 16-bit logits in
// `state.outputs` and, after each micro-batch's backward, computes its training metrics from them: eager fp32
// cross-entropies without gradients (composer/trainer/trainer.py v0.16, _train_microbatch -> _eval_train_metrics).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"
#include "tests/support/job_of.h"

namespace fsdpsim {
namespace {

constexpr int64_t kTokens = 2048;    // one 2,048-token sequence per micro-batch
constexpr int64_t kVocab = 128'256;  // Llama 3's vocabulary
constexpr int64_t kLogits = kTokens * kVocab;

// Llama 3 8B under FSDP2 with FlashAttention's cross-entropy on one DGX H100 node, two micro-batches per step.
std::vector<std::string> composer_llama(int metrics) {
  return {"implementation=fsdp2",
          "loss_implementation=flash_attn_xentropy",
          "seq_length=2048",
          "micro_batch_size=1",
          "global_batch_size=16",
          "nodes=1",
          "train_metric_cross_entropies=" + std::to_string(metrics)};
}

Schedule schedule_of(const std::vector<std::string>& sets) {
  return build_job_schedule(testing::job_of("llama3-8b", "dgx-h100-ndr", sets));
}

const Buffer* buffer_named(const Schedule& s, const std::string& name) {
  const auto b = std::find_if(s.buffers.begin(), s.buffers.end(), [&](const Buffer& x) { return x.name == name; });
  return b == s.buffers.end() ? nullptr : &*b;
}

TEST(TrainMetrics, EachMicroBatchRunsItsMetricsAfterItsBackwardOverTheHeldLogits) {
  const Schedule s = schedule_of(composer_llama(2));
  for (int mb = 0; mb < 2; ++mb) {
    const std::string suffix = ".mb" + std::to_string(mb);
    const auto join =
        std::find_if(s.ops.begin(), s.ops.end(), [&](const Op& op) { return op.name == "rs_join" + suffix; });
    ASSERT_NE(join, s.ops.end());
    const Op& metrics = *(join + 1);  // the next op of the program: backward() has returned
    EXPECT_EQ(metrics.name, "train_metrics.output" + suffix);
    EXPECT_EQ(metrics.stream, join->stream);
    const Buffer* held = buffer_named(s, "logits_held.output" + suffix);
    ASSERT_NE(held, nullptr);
    EXPECT_EQ(held->size_bytes, kLogits * 2);  // the 16-bit logits, not an fp32 copy
    ASSERT_EQ(metrics.reads.size(), 1u);
    EXPECT_EQ(s.buffers[static_cast<size_t>(metrics.reads[0].index())].name, held->name);
    // Each metric's fp32 upcast and fp32 log-softmax, allocated and freed by the op.
    ASSERT_EQ(metrics.allocs.size(), 2u);
    for (const BufferId b : metrics.allocs) {
      EXPECT_EQ(s.buffers[static_cast<size_t>(b.index())].size_bytes, kLogits * 4);
      EXPECT_NE(std::find(metrics.frees.begin(), metrics.frees.end(), b), metrics.frees.end());
    }
    // Two metrics, each reading the bf16 logits, writing and reading the fp32 copy and log-softmax: 18 bytes a logit.
    EXPECT_EQ(metrics.bytes_touched, 2 * 18 * kLogits);
    EXPECT_EQ(metrics.kernels, 12);
  }
}

TEST(TrainMetrics, TheLossSavesTheHeldLogitsRatherThanACopy) {
  const Schedule without = schedule_of(composer_llama(0));
  const Schedule with = schedule_of(composer_llama(2));
  const Buffer* saved_without = buffer_named(without, "act.output.mb0");
  const Buffer* saved_with = buffer_named(with, "act.output.mb0");
  ASSERT_NE(saved_without, nullptr);
  ASSERT_NE(saved_with, nullptr);
  EXPECT_EQ(saved_without->size_bytes - saved_with->size_bytes, kLogits * 2);
  EXPECT_EQ(buffer_named(without, "logits_held.output.mb0"), nullptr);
}

TEST(TrainMetrics, TheMetricsTakeTimeAndTheStepGrows) {
  const Job without = testing::job_of("llama3-8b", "dgx-h100-ndr", composer_llama(0));
  const Job with = testing::job_of("llama3-8b", "dgx-h100-ndr", composer_llama(2));
  const Schedule a = build_job_schedule(without);
  const Schedule b = build_job_schedule(with);
  const Report ra = make_report(a, without.topology, run_schedule(a, without.topology, SimOptions{}));
  const Report rb = make_report(b, with.topology, run_schedule(b, with.topology, SimOptions{}));
  EXPECT_GT(rb.step_time_s, ra.step_time_s);
}

TEST(TrainMetrics, RefusedWhereComposerDoesNotRunOrTheLogitsAreNotKept) {
  std::vector<std::string> megatron = composer_llama(2);
  megatron[0] = "implementation=megatron_fsdp";
  EXPECT_HAS(error_of([&] { (void)schedule_of(megatron); }), "implementation=fsdp2 with pp=1");
  std::vector<std::string> eager = composer_llama(2);
  eager[1] = "loss_implementation=eager_fp32";
  const std::string message = error_of([&] { (void)schedule_of(eager); });
  EXPECT_HAS(message, "train_metric_cross_entropies");
  EXPECT_HAS(message, "loss_implementation=flash_attn_xentropy");
  std::vector<std::string> held = composer_llama(2);
  held[1] = "loss_implementation=compiled";
  held.push_back("loop_holds_logits=true");
  EXPECT_HAS(error_of([&] { (void)schedule_of(held); }), "loop_holds_logits");
}

}  // namespace
}  // namespace fsdpsim
