// Persistent memory per strategy against hand-derived formulas (docs/architecture.md §4.6.5, §4.7).
#include <gtest/gtest.h>

#include <algorithm>

#include "builders/builder.h"
#include "model/model.h"
#include "schedule/summary.h"
#include "tests/schedule/tiny_llama.h"

namespace fsdpsim {
namespace {

// The tiny model of tests/schedule/tiny_llama.h, 2 layers.
ModelSpec tiny_model() {
  return testing::tiny_llama(2);
}

// Padded sizes on one 8-GPU node (dense shard group N = 8), docs/architecture.md §4.6.1: ceil(elems / (N·row)) · N·row.
//   non-unit group: 262,144 + 262,400 = 524,544; quantum 8·256 = 2,048 → 257 · 2,048 = 526,336
//   each layer:     1,049,088;                   quantum 8·1024 = 8,192 → 129 · 8,192 = 1,056,768
constexpr int64_t kNonUnitPadded = 526'336;
constexpr int64_t kLayerPadded = 1'056'768;
constexpr int64_t kTotalPadded = kNonUnitPadded + 2 * kLayerPadded;  // 2,639,872
constexpr int64_t kShard = kTotalPadded / 8;                         // 329,984 elements per rank

int64_t persistent(const std::vector<std::string>& sets, const std::string& category = "") {
  FsdpConfig c;
  for (const auto& s : sets) apply_override(c, s);
  const Schedule s = build_schedule(tiny_model(), c, 8);
  if (category.empty()) return s.persistent_bytes();
  const ScheduleStats stats = schedule_stats(s);
  for (const auto& [cat, bytes] : stats.persistent_bytes) {
    if (to_string(cat) == category) return bytes;
  }
  return 0;
}

TEST(PersistentMemory, Zero3WithFp32GradsIs18BytesPerShardElementPlusNonUnitWeights) {
  // BF16 weights (2) + FP32 main weights (4) + FP32 grads (4) + FP32 Adam (8) = 18 B per shard element, plus the
  // non-unit parameters kept unsharded in BF16 after their first gather (docs/architecture.md §4.6.3): 2 · 526,336.
  EXPECT_EQ(persistent({"main_grads_dtype=fp32"}), 18 * kShard + 2 * kNonUnitPadded);
}

TEST(PersistentMemory, Zero3DefaultBf16GradsIs16BytesPerShardElement) {
  // The snapshot's default main grads follow the parameter dtype (BF16): 2 + 4 + 2 + 8 = 16 B
  // (docs/architecture.md §4.6.5).
  EXPECT_EQ(persistent({}), 16 * kShard + 2 * kNonUnitPadded);
}

TEST(PersistentMemory, Zero2KeepsFullWeights) {
  // optim_grads: full BF16 weights (2 · all), sharded main weights, grads and Adam: (4 + 2 + 8) per shard element.
  EXPECT_EQ(persistent({"data_parallel_sharding_strategy=optim_grads"}), 2 * kTotalPadded + 14 * kShard);
}

TEST(PersistentMemory, Zero1KeepsFullWeightsAndGrads) {
  // optim: full BF16 weights and full BF16 grads (2 + 2 per element), sharded main weights and Adam (4 + 8).
  EXPECT_EQ(persistent({"data_parallel_sharding_strategy=optim"}), 4 * kTotalPadded + 12 * kShard);
}

TEST(PersistentMemory, NoShardKeepsEverythingUnpadded) {
  // no_shard: nothing is sharded or padded: (2 + 4 + 2 + 8) · (524,544 + 2 · 1,049,088) = 16 · 2,622,720.
  EXPECT_EQ(persistent({"data_parallel_sharding_strategy=no_shard"}), 16 * (524'544 + 2 * 1'049'088));
}

TEST(PersistentMemory, Zero3MinusZero1IsTheShardedWeightsAndGrads) {
  // ZeRO-1 holds full weights and grads; ZeRO-3 holds their shards and the non-unit weights:
  // (4·all + 12·shard) − (16·shard + 2·non-unit) = 4·all − 4·shard − 2·non-unit.
  EXPECT_EQ(persistent({"data_parallel_sharding_strategy=optim"}) - persistent({}),
            4 * kTotalPadded - 4 * kShard - 2 * kNonUnitPadded);
}

TEST(PersistentMemory, HfsdpShardsOptimizerOverInnerTimesOuter) {
  // HFSDP (docs/architecture.md §4.6.5) on 2 nodes with 2 outer replicas: inner group N_in = 8 (as on one node, same
  // padding), outer M = 2.
  // Memory = b_w·P/N_in + b_g·P/N_in + (b_m + 8)·P/(N_in·M) = 2·shard + 2·shard + 12·shard/2, plus non-unit.
  const int64_t got =
      persistent({"nodes=2", "num_distributed_optimizer_instances=2", "outer_dp_sharding_strategy=optim"});
  EXPECT_EQ(got, 2 * kShard + 2 * kShard + 12 * kShard / 2 + 2 * kNonUnitPadded);
}

TEST(PersistentMemory, DoubleBufferAddsTwoSlotsPerBufferKind) {
  // FixedPoolAllocator (docs/architecture.md §4.6.6): 2 slots of the modal unit for weights (BF16) and grads (BF16):
  // 2·U·(2 + 2).
  EXPECT_EQ(persistent({"fsdp_double_buffer=true"}) - persistent({}), 2 * kLayerPadded * (2 + 2));
}

TEST(PersistentMemory, Fsdp2Is12BytesPerShardElementWithFp32ShardsAndItsGradientsComeAndGo) {
  // FSDP2 (docs/architecture.md §4.7): FP32 sharded parameters and Adam held all step: 4 + 8 = 12 B per element; no
  // BF16 shard and no unsharded non-units. FSDP2 pads per parameter, approximated per group like Megatron: the root
  // group holds embedding + output = 524,544 (same quantum 2,048 → 526,336), each layer 1,056,768 → the same shard
  // size. The FP32 gradient shards (4 B per element) are not persistent: each group's first reduction of the step
  // allocates them and the optimizer frees them (zero_grad(set_to_none=True)).
  EXPECT_EQ(persistent({"implementation=fsdp2"}), 12 * kShard);
  FsdpConfig c;
  apply_override(c, "implementation=fsdp2");
  const Schedule s = build_schedule(tiny_model(), c, 8);
  int64_t grads = 0;
  for (const Buffer& b : s.buffers) {
    if (b.category != BufferCategory::grad_shard) continue;
    EXPECT_FALSE(b.persistent) << b.name;
    grads += b.size_bytes;
  }
  EXPECT_EQ(grads, 4 * kShard);
}

// Adam over fp32 shards: fused moves 28 B per element in one pass; torch.optim's foreach 80 B (eight list kernels,
// builder_common.h) and holds an fp32 temporary of every element during the step.
TEST(OptimizerImplementation, ForeachMovesEightyBytesPerFp32ElementAndHoldsATemporary) {
  for (const char* implementation : {"implementation=fsdp2", "implementation=megatron_fsdp"}) {
    for (const auto& [impl, bytes_per_element] : {std::pair{"fused", 28}, std::pair{"foreach", 80}}) {
      FsdpConfig c;
      apply_override(c, implementation);
      apply_override(c, "main_grads_dtype=fp32");
      apply_override(c, std::string("optimizer_implementation=") + impl);
      const Schedule s = build_schedule(tiny_model(), c, 8);
      const auto adam =
          std::find_if(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.kind == OpKind::optimizer; });
      ASSERT_NE(adam, s.ops.end());
      EXPECT_EQ(adam->bytes_touched, bytes_per_element * kShard) << implementation << " " << impl;
      int64_t temporaries = 0;
      for (const BufferId b : adam->allocs) temporaries += s.buffers[b].size_bytes;
      EXPECT_EQ(temporaries, std::string(impl) == "foreach" ? 4 * kShard : 0) << implementation << " " << impl;
    }
  }
}

}  // namespace
}  // namespace fsdpsim

namespace fsdpsim {
namespace {

// The FLOPs per token of the largest jobs: the whole job's FLOPs per step (per GPU × GPUs) overflow int64, so the
// figure is computed without forming them. Llama-3.1-405B on 16,384 GPUs with 32,768 sequences of 8,192 tokens a step
// (2^28 tokens): 3.96e16 FLOPs per GPU per step × 16,384 GPUs / 2^28 tokens = 2.42e12 per token, which the report
// printed as "-0.59 GFLOP per token" before.
TEST(ModelSize, FlopsPerTokenOfAJobWhoseStepFlopsOverflowInt64) {
  Schedule s;
  s.info.world_size = 16384;
  s.info.global_tokens_per_step = int64_t{32768} * 8192;         // 2^28
  s.info.model_flops_per_gpu = int64_t{39'600'000'000'000'000};  // 3.96e16: × 16,384 = 6.5e20 > 9.2e18
  EXPECT_EQ(model_size(s).flops_per_token, int64_t{39'600'000'000'000'000} / 16384);  // 2^14 GPUs per 2^28 tokens
  // A ratio that does not reduce to whole GPUs per token keeps the integer quotient of before.
  s.info.world_size = 24;
  s.info.global_tokens_per_step = 36;
  s.info.model_flops_per_gpu = 1000;
  EXPECT_EQ(model_size(s).flops_per_token, 1000 * 24 / 36);  // 666
}

}  // namespace
}  // namespace fsdpsim
