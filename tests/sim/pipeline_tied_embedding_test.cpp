// Tied word embeddings under pipeline parallelism (issue 14). Megatron gives the last stage its own copy of the word
// embedding as `output_layer.weight` and, after finish_grad_sync, all-reduces the two copies' gradients over the
// embedding group (the first and the last stage); torchtitan refuses the combination.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "builders/builder.h"
#include "common/error.h"
#include "schedule/ir_yaml.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "tests/schedule/tiny_llama.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

ModelSpec tiny(bool tied) {
  ModelSpec m = testing::tiny_llama(8);
  m.tied_embeddings = tied;
  return m;
}

Schedule pipeline(bool tied, const std::vector<std::string>& sets) {
  FsdpConfig c;
  c.nodes = 1;
  for (const std::string& s : sets) apply_override(c, s);
  Schedule s = build_schedule(tiny(tied), c, 8);
  validate_or_throw(s, "the pipeline schedule");
  return s;
}

// Bytes of the persistent buffers of one stage's GPU, by category.
std::map<BufferCategory, int64_t> persistent_of_stage(const Schedule& s, int32_t stage) {
  std::map<BufferCategory, int64_t> out;
  for (const Buffer& b : s.buffers) {
    if (b.persistent && b.stage == stage) out[b.category] += b.size_bytes;
  }
  return out;
}

std::vector<const Op*> embedding_exchange(const Schedule& s) {
  std::vector<const Op*> out;
  for (const Op& op : s.ops) {
    if (op.name.find("embedding_grad") != std::string::npos) out.push_back(&op);
  }
  return out;
}

TEST(PipelineTiedEmbedding, TheLastStageHoldsTheUntiedModelsOutputLayer) {
  const std::vector<std::string> sets{"pp=4", "global_batch_size=8"};
  const Schedule tied = pipeline(true, sets);
  const Schedule untied = pipeline(false, sets);
  // The copy is a parameter like the untied model's output layer: the same shards, gradients and optimizer state on
  // the last stage, and the embedding stage unchanged.
  EXPECT_EQ(persistent_of_stage(tied, 3), persistent_of_stage(untied, 3));
  EXPECT_EQ(persistent_of_stage(tied, 0), persistent_of_stage(untied, 0));
  // Without a pipeline the output layer reads the embedding's weight: the tied model holds vocab × hidden fewer
  // parameters (tiny: 1024 × 256, bf16 compute weights sharded over 8).
  FsdpConfig c;
  c.nodes = 1;
  const Schedule no_pp_tied = build_schedule(tiny(true), c, 8);
  const Schedule no_pp_untied = build_schedule(tiny(false), c, 8);
  EXPECT_EQ(persistent_of_stage(no_pp_untied, 0)[BufferCategory::param_shard] -
                persistent_of_stage(no_pp_tied, 0)[BufferCategory::param_shard],
            int64_t{1024} * 256 * 2 / 8);
  EXPECT_TRUE(embedding_exchange(no_pp_tied).empty());
  EXPECT_TRUE(embedding_exchange(untied).empty());
}

TEST(PipelineTiedEmbedding, TheGradientsAreExchangedBetweenTheFirstAndLastStageBeforeTheOptimizer) {
  const Schedule s = pipeline(true, {"pp=4", "global_batch_size=8"});
  const std::vector<const Op*> ops = embedding_exchange(s);
  ASSERT_EQ(ops.size(), 4u);  // a send and a receive on each end
  const Group& embd = s.groups[s.group_index(GroupRole::embd)];
  EXPECT_EQ(embd.size, 2);
  EXPECT_EQ(embd.stride, 3 * 2);  // stages 0 and 3 of 8 GPUs in 4 stages of 2
  for (const Op* op : ops) {
    EXPECT_TRUE(s.stage_of(*op) == 0 || s.stage_of(*op) == 3) << op->name;
    EXPECT_EQ(op->group, s.group_index(GroupRole::embd));
    const Op& peer = s.ops[op->peer];
    EXPECT_NE(s.stage_of(peer), s.stage_of(*op));
    // The local shard of the main grad (bf16 by default, main_grads_dtype: auto): 1024 × 256 elements over the 2
    // ranks of a stage's FSDP group.
    EXPECT_EQ(std::max(op->send_bytes, op->recv_bytes), int64_t{1024} * 256 / 2 * 2) << op->name;
  }
  // Each end's optimizer step (after grad_sync) waits for both halves of its end.
  for (const int32_t stage : {0, 3}) {
    const auto next = std::find_if(s.ops.begin(), s.ops.end(), [&](const Op& op) {
      return s.stage_of(op) == stage && op.phase == Phase::optim && op.stream == s.compute_stream(stage) &&
             op.kind != OpKind::sync;
    });
    ASSERT_NE(next, s.ops.end());
    int waits = 0;
    for (const Op* op : ops) {
      if (s.stage_of(*op) == stage) waits += std::count(next->deps.begin(), next->deps.end(), op->id) > 0;
    }
    EXPECT_EQ(waits, 2) << "stage " << stage;
  }
  EXPECT_EQ(schedule_from_yaml(schedule_to_yaml(s), "tied.yaml"), s);
}

TEST(PipelineTiedEmbedding, TheLastStageWaitsForTheFirstStagesGradientsAndTheStepEndsAfterTheExchange) {
  const Schedule s = pipeline(true, {"pp=4", "global_batch_size=8"});
  const RunRecord r = run_schedule(s, topology_preset("dgx-h100-ndr"), SimOptions{});
  const StepRun& step = r.steps.back();
  TimeNs stage0_sync = 0, exchange_start = 0, exchange_end = 0, stage3_optimizer_start = 0;
  for (const Op& op : s.ops) {
    const OpTiming& t = step.ops[op.id];
    if (op.name == "grad_sync" && s.stage_of(op) == 0) stage0_sync = t.start_ns;
    if (op.kind == OpKind::send && op.name.find("embedding_grad") != std::string::npos) {
      exchange_start = std::max(exchange_start, t.start_ns);
      exchange_end = std::max(exchange_end, t.end_ns);
    }
    if (op.kind == OpKind::optimizer && s.stage_of(op) == 3) stage3_optimizer_start = t.start_ns;
  }
  // Stage 0 finishes its backward last (1F1B drains towards it); the exchange starts only then, on both ends.
  EXPECT_GE(exchange_start, stage0_sync);
  EXPECT_GT(exchange_end, exchange_start);
  EXPECT_GE(stage3_optimizer_start, exchange_end);
}

TEST(PipelineTiedEmbedding, Fsdp2RefusesTiedEmbeddingsWithAPipelineAsTorchtitanDoes) {
  FsdpConfig c;
  c.nodes = 1;
  for (const char* set : {"implementation=fsdp2", "pp=2", "global_batch_size=8"}) apply_override(c, set);
  try {
    (void)build_schedule(tiny(true), c, 8);
    FAIL() << "a tied FSDP2 pipeline was built";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Weight tying is not supported with Pipeline Parallel"), std::string::npos) << what;
    EXPECT_NE(what.find("tied_embeddings: false"), std::string::npos) << what;
  }
  // Also a V, whose rank 0 holds both the embedding and the output: torchtitan checks only the degree.
  FsdpConfig v;
  v.nodes = 1;
  for (const char* set : {"implementation=fsdp2", "pp=2", "pipeline_schedule=zbv", "global_batch_size=8"}) {
    apply_override(v, set);
  }
  EXPECT_THROW((void)build_schedule(tiny(true), v, 8), ConfigError);
  // pp = 1 stays allowed.
  FsdpConfig one;
  one.nodes = 1;
  apply_override(one, "implementation=fsdp2");
  EXPECT_NO_THROW((void)build_schedule(tiny(true), one, 8));
}

}  // namespace
}  // namespace fsdpsim
