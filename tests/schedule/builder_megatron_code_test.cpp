// The Megatron-FSDP builder against what Megatron-LM's code does (NVIDIA/Megatron-LM @ d98e8a64ddf3; file and
// function named in each test): bucket grouping, the reduce-scatter queue, autograd's param.grad, FP8 transposes,
// recompute chunks, expert shard groups of one rank, communicator ordering and NCCL registration. Every expected
// byte count is derived by hand in the comment above it.
#include <gtest/gtest.h>

#include <algorithm>

#include "builders/builder.h"
#include "model/model.h"
#include "tests/schedule/tiny_llama.h"

namespace fsdpsim {
namespace {

// The tiny Llama of tests/schedule/tiny_llama.h (its sizes are listed there), with `layers` decoder layers.
ModelSpec tiny_model(int32_t layers) {
  return testing::tiny_llama(layers);
}

// The same with every layer a mixture of 8 experts (top 2, expert width 512): per expert fc1 1024 × 256 = 262,144
// and fc2 256 × 512 = 131,072.
ModelSpec tiny_moe() {
  ModelSpec m = testing::tiny_llama(2);
  m.name = "tiny-moe";
  m.moe.num_experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden_size = 512;
  return m;
}

Schedule build(const ModelSpec& model, const std::vector<std::string>& sets, int32_t gpus = 8) {
  FsdpConfig c;
  for (const auto& s : sets) apply_override(c, s);
  return build_schedule(model, c, gpus);
}

const Buffer* buffer_named(const Schedule& s, const std::string& name) {
  for (const Buffer& b : s.buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

const Op* op_named(const Schedule& s, const std::string& name) {
  for (const Op& op : s.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

const Op* op_freeing(const Schedule& s, BufferId b) {
  for (const Op& op : s.ops) {
    if (std::find(op.frees.begin(), op.frees.end(), b) != op.frees.end()) return &op;
  }
  return nullptr;
}

bool has_prefix(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

TEST(MegatronCode, NonUnitParametersSplitAtMegatronLmsBucketSize) {
  // param_and_grad_buffer.py _get_parameter_groups, step 2: parameters outside FSDP units start a new bucket once the
  // accumulated size reaches bucket_size. The embedding (262,144) reaches 262,144 alone: [embedding] and [final norm,
  // output]. Padding to 8 × largest row 256 = 2,048: 262,144 stays, 262,400 → 129 × 2,048 = 264,192. (The cap
  // rule makes the queue capacity 2 × 1,049,088 so that the queue pops in a tiny model, see the next test.)
  const Schedule split = build(tiny_model(4), {"ddp_bucket_size=262144", "communication_budget_rule=cap"});
  const Buffer* embedding = buffer_named(split, "params.non_unit.embedding");
  const Buffer* output = buffer_named(split, "params.non_unit.output");
  ASSERT_NE(embedding, nullptr);
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(embedding->size_bytes, 262'144 * 2);
  EXPECT_EQ(output->size_bytes, 264'192 * 2);
  // Its gradient bucket is reduce-scattered right after the output layer's backward and leaves the queue before the
  // end of backward (not held until the embedding's gradient): the queue holds [output 264,192, layer.3, layer.2]
  // = 2,377,728 > 2,098,176 at layer.1's reduce-scatter, which pops the output bucket (and layer.3).
  const Op* rs = op_named(split, "rs.non_unit.output.mb0");
  ASSERT_NE(rs, nullptr);
  EXPECT_GT(rs->id, op_named(split, "bwd.output.mb0")->id);
  EXPECT_LT(rs->id, op_named(split, "bwd.layer.3.mb0")->id);
  const Op* freed_by = op_freeing(split, buffer_named(split, "grads.non_unit.output.mb0")->id);
  ASSERT_NE(freed_by, nullptr);
  EXPECT_EQ(freed_by->name, "rs_queue_pop.mb0");
  EXPECT_LT(freed_by->id, op_named(split, "bwd.embedding.mb0")->id);

  // One more element of bucket size, or no --overlap-grad-reduce (bucket size None), keeps one non-unit bucket:
  // 524,544 → 257 × 2,048 = 526,336. main_grad_getter allocates all of it at the first gradient, the output layer's,
  // and it is reduced after the embedding's backward: alive through the whole backward.
  for (const auto& sets :
       {std::vector<std::string>{"ddp_bucket_size=262145"}, std::vector<std::string>{"overlap_grad_reduce=false"}}) {
    const Schedule one = build(tiny_model(2), sets);
    ASSERT_NE(buffer_named(one, "params.non_unit"), nullptr) << sets.front();
    EXPECT_EQ(buffer_named(one, "params.non_unit")->size_bytes, 526'336 * 2);
    const Buffer* grads = buffer_named(one, "grads.non_unit.mb0");
    ASSERT_NE(grads, nullptr);
    EXPECT_EQ(grads->size_bytes, 526'336 * 2);  // BF16 gradient communication
    const Op& bwd_output = *op_named(one, "bwd.output.mb0");
    EXPECT_NE(std::find(bwd_output.allocs.begin(), bwd_output.allocs.end(), grads->id), bwd_output.allocs.end());
    EXPECT_EQ(op_freeing(one, grads->id)->name, "rs_join.mb0");
  }
}

TEST(MegatronCode, TheReduceScatterQueueKeepsTwoReducedLayersBesideTheOneBeingFilled) {
  // MegatronFSDP.__init__: X = 2 × the average unit's unpadded parameters (here min(1e9, X), PR #7134's rule, so that
  // X of a tiny model matters) = 2 × 1,049,088 = 2,098,176. wait_for_previous_grad_reduce pops while the queued
  // *padded* sizes exceed X: two layer buckets are 2 × 1,056,768 = 2,113,536 > X, so before each reduce-scatter the
  // queue drops to one bucket. While a layer's backward fills its bucket, 3 layer buckets are alive (its own and two
  // queued); comparing with padded sizes on both sides would keep 4.
  const Schedule s = build(tiny_model(6), {"communication_budget_rule=cap"});
  int live = 0, most = 0;
  for (const Op& op : s.ops) {
    for (const BufferId b : op.allocs) live += has_prefix(s.buffers[b].name, "grads.layer.");
    most = std::max(most, live);
    for (const BufferId b : op.frees) live -= has_prefix(s.buffers[b].name, "grads.layer.");
  }
  EXPECT_EQ(most, 3);
}

TEST(MegatronCode, AutogradsParamGradLivesUntilItIsCopiedIntoTheBucket) {
  // megatron_fsdp.py _grad_acc (a post-accumulate-grad hook per parameter): param.grad is copied into main_grad and
  // deleted, so one weight gradient is alive at a time: the largest, fc1's 524,288 elements in BF16 = 1,048,576 B.
  const Schedule s = build(tiny_model(2), {});
  const Buffer* layer = buffer_named(s, "param_grad.layer.0.mb0");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->category, BufferCategory::weight_grad);
  EXPECT_EQ(layer->size_bytes, 1'048'576);
  EXPECT_EQ(op_freeing(s, layer->id)->name, "bwd.layer.0.mb0");
  EXPECT_EQ(buffer_named(s, "param_grad.embedding.mb0")->size_bytes, 262'144 * 2);
  // TE's wgrad fusion (gradient_accumulation_fusion) writes linear weight gradients into main_grad: what is left is
  // a norm's 256 elements in a layer and the output unit, and the whole embedding table, which is no TE linear.
  // The bucket copy of the linear weights goes too: (2 + 2) B × 1,048,576 linear elements per layer.
  const Schedule fused = build(tiny_model(2), {"gradient_accumulation_fusion=true"});
  EXPECT_EQ(buffer_named(fused, "param_grad.layer.0.mb0")->size_bytes, 256 * 2);
  EXPECT_EQ(buffer_named(fused, "param_grad.output.mb0")->size_bytes, 256 * 2);
  EXPECT_EQ(buffer_named(fused, "param_grad.embedding.mb0")->size_bytes, 262'144 * 2);
  EXPECT_EQ(op_named(s, "bwd.layer.0.mb0")->bytes_touched - op_named(fused, "bwd.layer.0.mb0")->bytes_touched,
            4 * 1'048'576);
}

TEST(MegatronCode, Fp8ParametersGetTheirTransposeAfterTheBackwardGather) {
  // Tensor scaling on Hopper (mixed_precision.py fp8_create_transpose_cache, called by the pre-backward wait): one
  // byte per FP8 GEMM weight of the unit — q, k, v, o 262,144 + gate, up, down 786,432 = 1,048,576 B — created for
  // the layer's backward and dropped at its release, plus the transpose kernel reading and writing it.
  const Schedule hopper = build(tiny_model(2), {"param_dtype=fp8", "fp8_recipe=tensorwise"});
  const Buffer* t = buffer_named(hopper, "fp8_transpose.layer.0.mb0");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->size_bytes, 1'048'576);
  EXPECT_EQ(op_freeing(hopper, t->id)->name, "bwd.layer.0.mb0");
  // MXFP8 (DataParallelBuffer with is_transpose_buffer): a persistent column-wise shard, all-gathered in backward
  // instead of a local transpose. FP8 part per layer 1,048,576 (a multiple of 8 × 1,024) over 8 ranks, 2 layers:
  // 262,144 B.
  const Schedule mx =
      build(tiny_model(2), {"param_dtype=fp8", "fp8_recipe=mxfp8", "suggested_communication_unit_size=1"});
  EXPECT_EQ(buffer_named(mx, "fp8_transpose.layer.0.mb0"), nullptr);
  const Buffer* shard = buffer_named(mx, "param_shard.transpose");
  ASSERT_NE(shard, nullptr);
  EXPECT_TRUE(shard->persistent);
  EXPECT_EQ(shard->size_bytes, 2 * 1'048'576 / 8);
  const Op* ag_bwd = op_named(mx, "ag.bwd.layer.0.mb0");
  ASSERT_NE(ag_bwd, nullptr);
  EXPECT_NE(std::find(ag_bwd->reads.begin(), ag_bwd->reads.end(), shard->id), ag_bwd->reads.end());
}

TEST(MegatronCode, ThePrecisionAwareOptimizerReadsTheGradShardWithoutAnFp32Copy) {
  // DistributedOptimizer + update_main_grads: without decoupled grads the BF16 grad shard is copied to FP32 for Adam;
  // --use-precision-aware-optimizer sets megatron_fsdp_use_decoupled_grad (training.py) and there is no copy.
  EXPECT_NE(op_named(build(tiny_model(2), {}), "update_main_grads"), nullptr);
  const Schedule decoupled = build(tiny_model(2), {"use_precision_aware_optimizer=true"});
  EXPECT_EQ(op_named(decoupled, "update_main_grads"), nullptr);
  EXPECT_EQ(buffer_named(decoupled, "optimizer_grads"), nullptr);
}

TEST(MegatronCode, RecomputeChunksKeepOnlyTheirLastLayerGathered) {
  // megatron_fsdp.py: each recomputed layer's post-forward marks its bucket lazily releasable; the next layer's
  // all-gather recycles it. With chunks of 2 layers ([2, 3] first in backward), layer 2's weights gathered for the
  // recompute are freed by the ag_recycle before layer 3's backward, and gathered again for layer 2's backward.
  // No prefetch (a budget of one element), so every gather is the one the hooks ask for.
  const Schedule s = build(
      tiny_model(4), {"recompute_granularity=full", "recompute_num_layers=2", "suggested_communication_unit_size=1"});
  const Buffer* gathered = buffer_named(s, "params.recompute.layer.2.mb0");
  ASSERT_NE(gathered, nullptr);
  const Op* freed_by = op_freeing(s, gathered->id);
  ASSERT_NE(freed_by, nullptr);
  EXPECT_EQ(freed_by->name, "ag_recycle.mb0");
  EXPECT_LT(freed_by->id, op_named(s, "bwd.layer.3.mb0")->id);
  const Op* regather = op_named(s, "ag.bwd.layer.2.mb0");
  ASSERT_NE(regather, nullptr);
  EXPECT_GT(regather->id, op_named(s, "recompute.layer.3.mb0")->id);
  // The chunk's last layer keeps its recompute gather for its backward.
  EXPECT_EQ(op_freeing(s, buffer_named(s, "params.recompute.layer.3.mb0")->id)->name, "bwd.layer.3.mb0");
}

TEST(MegatronCode, AnExpertShardGroupOfOneRankIsNeitherGatheredNorReduced) {
  // param_and_grad_buffer.py: is_data_distributed = ... and group.size() > 1. With ep = 8 on 8 GPUs the expert
  // data-parallel group is one rank: the expert weights and gradients stay full in their persistent buffers, with no
  // all-gather bucket, no unsharded gradient bucket and nothing to reduce.
  const Schedule ep8 = build(tiny_moe(), {"ep=8"});
  for (const Op& op : ep8.ops) {
    const bool expert_collective = op.name.find(".experts.") != std::string::npos &&
                                   (op.kind == OpKind::all_gather || op.kind == OpKind::reduce_scatter);
    EXPECT_FALSE(expert_collective) << op.name;
  }
  for (const Buffer& b : ep8.buffers) {
    EXPECT_FALSE(!b.persistent && b.name.find(".experts") != std::string::npos) << b.name;
  }
  // One expert per rank: fc1 262,144 + fc2 131,072 = 393,216 per layer, 2 layers, BF16, unpadded and unsharded.
  EXPECT_EQ(buffer_named(ep8, "param_shard.experts")->size_bytes, 2 * 393'216 * 2);
  // With ep = 1 the 8 experts are sharded over 8 ranks and gathered per layer.
  const Schedule ep1 = build(tiny_moe(), {});
  EXPECT_NE(op_named(ep1, "ag.layer.0.experts.mb0"), nullptr);
  EXPECT_NE(op_named(ep1, "rs.layer.0.experts.mb0"), nullptr);
}

TEST(MegatronCode, AllGathersQueueBehindReduceScattersOnTheirCommunicator) {
  // All-gathers and reduce-scatters use the same dp-cp process group unless --create-all-gather-group
  // (arguments.py); ProcessGroupNCCL runs one group's collectives in host order. The backward gather issued after
  // layer 1's reduce-scatter waits for it.
  const auto depends_on_rs = [](const Schedule& s, const std::string& name) {
    const Op* op = op_named(s, name);
    return std::any_of(op->deps.begin(), op->deps.end(),
                       [&](OpId d) { return s.ops[d].kind == OpKind::reduce_scatter; });
  };
  const std::vector<std::string> base{"suggested_communication_unit_size=1"};
  EXPECT_TRUE(depends_on_rs(build(tiny_model(3), base), "ag.bwd.layer.0.mb0"));
  std::vector<std::string> own = base;
  own.push_back("create_all_gather_group=true");
  const Schedule separate = build(tiny_model(3), own);
  for (const Op& op : separate.ops) {
    if (op.kind == OpKind::all_gather) {
      EXPECT_FALSE(depends_on_rs(separate, op.name)) << op.name;
    }
  }
}

TEST(MegatronCode, NcclUbRegistersShardsAndPoolsButNotMainWeightsOrNonUnitBuckets) {
  // nccl_ub allocates the parameter and gradient buffers and the double-buffer pool in NCCL's memory pool; main
  // weights are allocated outside it, and non-unit buckets come from the plain caching allocator.
  const Schedule s = build(tiny_model(2), {"nccl_ub=true"});
  EXPECT_TRUE(buffer_named(s, "param_shard")->nccl_registered);
  EXPECT_TRUE(buffer_named(s, "grad_shard")->nccl_registered);
  EXPECT_TRUE(buffer_named(s, "pool.params.slot0")->nccl_registered);
  EXPECT_FALSE(buffer_named(s, "main_weights")->nccl_registered);
  EXPECT_FALSE(buffer_named(s, "params.non_unit")->nccl_registered);
}

TEST(MegatronCode, UnderTheDoubleBufferANonUnitRequestPrefetchesNothing) {
  // AllGatherPipeline.all_gather_params: with fsdp_double_buffer, a request of non-unit buckets only skips prefetch.
  // start_param_sync and the embedding's pre-forward gather the non-unit bucket alone; layer 0 is gathered at its own
  // pre-forward, after the embedding's forward. Without the double buffer it is prefetched before.
  const Schedule db = build(tiny_model(2), {"fsdp_double_buffer=true"});
  EXPECT_GT(op_named(db, "ag.layer.0.mb0")->id, op_named(db, "fwd.embedding.mb0")->id);
  const Schedule plain = build(tiny_model(2), {});
  EXPECT_LT(op_named(plain, "ag.layer.0.mb0")->id, op_named(plain, "fwd.embedding.mb0")->id);
}

}  // namespace
}  // namespace fsdpsim
