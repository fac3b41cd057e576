// The builders: every strategy, implementation, dense and MoE model, with and without HSDP, gives a schedule that
// passes validate(); and the Megatron-FSDP rules (prefetch depth, backward ordering, per-strategy collectives) and
// FSDP2's (copy-in/out, root kept after forward) show in the ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "builders/builder.h"
#include "model/model.h"
#include "schedule/validate.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

struct BuildCase {
  std::string name;
  std::string model;
  std::vector<std::string> sets;
};

FsdpConfig config_of(const std::vector<std::string>& sets) {
  FsdpConfig c;
  for (const auto& s : sets) apply_override(c, s);
  return c;
}

std::vector<BuildCase> build_cases() {
  std::vector<BuildCase> cases;
  const std::vector<std::pair<std::string, std::vector<std::string>>> models{{"llama3-8b", {}},
                                                                             {"mixtral-8x7b", {"ep=8"}}};
  for (const auto& [model, model_sets] : models) {
    for (const char* strategy : {"no_shard", "optim", "optim_grads", "optim_grads_params"}) {
      for (const int outer : {1, 2}) {
        std::vector<std::string> sets = model_sets;
        sets.push_back(std::string("data_parallel_sharding_strategy=") + strategy);
        sets.push_back("nodes=2");
        sets.push_back("global_batch_size=32");  // 2 micro-batches over dp 16
        sets.push_back("num_distributed_optimizer_instances=" + std::to_string(outer));
        cases.push_back({model + "_megatron_" + strategy + "_outer" + std::to_string(outer), model, sets});
        const std::string s(strategy);
        if (s == "optim_grads_params") {
          // FSDP2 always shards everything; its knobs are the wrapping and reshard_after_forward.
          for (const char* wrap : {"torchtitan", "blocks_and_root"}) {
            for (const char* reshard : {"true", "false"}) {
              std::vector<std::string> fsdp2 = sets;
              fsdp2.push_back("implementation=fsdp2");
              fsdp2.push_back(std::string("fsdp2_wrap=") + wrap);
              fsdp2.push_back(std::string("reshard_after_forward=") + reshard);
              cases.push_back(
                  {model + "_fsdp2_" + wrap + "_reshard_" + reshard + "_outer" + std::to_string(outer), model, fsdp2});
            }
          }
        }
      }
    }
  }
  const std::vector<std::string> base{"nodes=2", "global_batch_size=32"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> all = base;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  cases.push_back(
      {"hfsdp", "llama3-8b", with({"num_distributed_optimizer_instances=2", "outer_dp_sharding_strategy=optim"})});
  cases.push_back({"hfsdp_moe", "mixtral-8x7b",
                   with({"ep=8", "num_distributed_optimizer_instances=2", "outer_dp_sharding_strategy=optim"})});
  cases.push_back({"double_buffer", "llama3-8b", with({"fsdp_double_buffer=true"})});
  cases.push_back({"nccl_ub_moe", "mixtral-8x7b", with({"ep=4", "nccl_ub=true"})});
  cases.push_back({"zero2_double_buffer", "llama3-8b",
                   with({"data_parallel_sharding_strategy=optim_grads", "fsdp_double_buffer=true"})});
  cases.push_back({"full_recompute", "llama3-8b", with({"recompute_granularity=full"})});
  cases.push_back(
      {"full_recompute_chunks", "llama3-8b", with({"recompute_granularity=full", "recompute_num_layers=4"})});
  cases.push_back({"block_recompute", "llama3-8b",
                   with({"recompute_granularity=full", "recompute_method=block", "recompute_num_layers=8"})});
  cases.push_back({"selective_tp", "llama3-8b", with({"recompute_granularity=selective", "tp=2"})});
  cases.push_back({"offload", "llama3-8b", with({"cpu_offloading_activations=true"})});
  cases.push_back({"fsdp2_recompute", "llama3-8b", with({"implementation=fsdp2", "recompute_granularity=full"})});
  cases.push_back({"fsdp2_offload", "llama3-8b", with({"implementation=fsdp2", "cpu_offloading_activations=true"})});
  cases.push_back({"fp8_params", "llama3-8b", with({"param_dtype=fp8"})});
  cases.push_back({"cp_fp32_grads", "llama3-8b", with({"cp=2", "seq_length=8192", "main_grads_dtype=fp32"})});
  cases.push_back(
      {"no_overlap_zero1", "llama3-8b",
       with({"data_parallel_sharding_strategy=optim", "overlap_param_gather=false", "overlap_grad_reduce=false"})});
  cases.push_back({"deepseek_ep", "deepseek-v3", {"nodes=4", "ep=32", "global_batch_size=64"}});
  cases.push_back({"fsdp2_async_tp", "llama3-8b", with({"implementation=fsdp2", "tp=8", "async_tp=true"})});
  cases.push_back(
      {"megatron_async_tp_recompute", "llama3-8b", with({"tp=4", "async_tp=true", "recompute_granularity=full"})});
  return cases;
}

class EveryBuild : public ::testing::TestWithParam<BuildCase> {};

TEST_P(EveryBuild, PassesValidation) {
  const BuildCase& c = GetParam();
  const Schedule s = build_schedule(model_preset(c.model), config_of(c.sets), 8);
  const auto problems = validate(s);
  for (const auto& p : problems) ADD_FAILURE() << p;
  // Each unit runs forward and backward once per micro-batch: (layers + 2) × micro-batches of each.
  std::map<Phase, int> computes;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::compute && s.streams[op.stream].name == "compute") ++computes[op.phase];
  }
  const int units = static_cast<int>(s.units.size());
  EXPECT_EQ(computes[Phase::fwd], units * s.info.micro_batches);
  EXPECT_EQ(computes[Phase::bwd], units * s.info.micro_batches);
}

INSTANTIATE_TEST_SUITE_P(Builders, EveryBuild, ::testing::ValuesIn(build_cases()),
                         [](const ::testing::TestParamInfo<BuildCase>& p) {
                           std::string name = p.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// ---- Megatron-FSDP rules --------------------------------------------------------------------------------------------
std::vector<const Op*> ops_of(const Schedule& s, OpKind kind, Phase phase, int32_t mb) {
  std::vector<const Op*> out;
  for (const Op& op : s.ops) {
    if (op.kind == kind && op.phase == phase && op.micro_batch == mb) out.push_back(&op);
  }
  return out;
}

OpId first_op_named(const Schedule& s, const std::string& name) {
  for (const Op& op : s.ops) {
    if (op.name == name) return op.id;
  }
  return OpId::none();
}

// A layer left in BF16 under FP8 parameters (Megatron's --first-last-layers-bf16 with --fp8-param-gather) is not an
// FP8 module: Megatron-FSDP gathers its weights in BF16, twice the bytes of an FP8 layer's GEMM weights.
TEST(Builder, ALayerLeftInBf16GathersItsWeightsInBf16) {
  const Schedule s = build_schedule(
      model_preset("llama3-8b"),
      config_of({"fp8_compute=true", "param_dtype=fp8", "fp8_bf16_layers_at_start=1", "global_batch_size=8"}), 8);
  const Op& bf16 = s.ops[first_op_named(s, "ag.layer.0.mb0")];
  const Op& fp8 = s.ops[first_op_named(s, "ag.layer.1.mb0")];
  EXPECT_EQ(bf16.dtype, DType::bf16);
  EXPECT_EQ(fp8.dtype, DType::fp8);
  // 218,112,000 parameters a layer, 8,192 of them norm weights; each dtype's part padded to a multiple of 8 shards ×
  // the 14,336-element longest row = 114,688 elements. BF16 layer: 1,902 × 114,688 elements × 2 bytes. FP8 layer: the
  // 218,103,808 GEMM weights to 1,902 × 114,688 at 1 byte, the norm weights to 114,688 at 2 bytes.
  EXPECT_EQ(bf16.recv_bytes, int64_t{1'902} * 114'688 * 2);
  EXPECT_EQ(fp8.recv_bytes, int64_t{1'902} * 114'688 + 114'688 * 2);
}

TEST(MegatronBuilder, DefaultBudgetPrefetchesThreeLlama8bLayers) {
  // docs/architecture.md §4.6.2 at the snapshot: X = max(1e9, 2 × 218.1M) = 1e9 elements, S_AG = 5e8. Prefetching stops
  // once the listed units beyond the current one reach 5e8: 218M, 436M, 654M → k = 3.
  const Schedule s = build_schedule(model_preset("llama3-8b"), FsdpConfig{}, 8);
  EXPECT_EQ(s.info.prefetch_depth, 3);
  // Megatron-LM's bucket size on 8 GPUs is max(40M, 8M) = 40M, which the embedding (525M) reaches alone: the non-unit
  // parameters are buckets 0 [embedding] and 1 [final norm, output]. start_param_sync gathers bucket 0 and prefetches
  // bucket 1 (525M ≥ S_AG: stop); the embedding's pre-forward lists the same two; layer.0's pre-forward gathers
  // layer 0 and prefetches 1, 2, 3 (218M, 436M, 654M ≥ 5e8: stop). So 6 all-gathers precede the first layer's
  // forward, and layer.1's pre-forward adds layer.4 before its forward.
  int before_first_layer = 0, before_second_layer = 0;
  const OpId fwd0 = first_op_named(s, "fwd.layer.0.mb0");
  const OpId fwd1 = first_op_named(s, "fwd.layer.1.mb0");
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::all_gather) continue;
    before_first_layer += op.id < fwd0;
    before_second_layer += op.id < fwd1;
  }
  EXPECT_EQ(before_first_layer, 6);  // embedding, output, layers 0-3
  EXPECT_EQ(before_second_layer, 7);
}

TEST(MegatronBuilder, CapRuleAndDoubleBufferGiveDepthOne) {
  // PR #7134: X = min(1e9, 2U) = 2U → S_AG = U → one unit ahead. The double buffer caps the depth at 1
  // (docs/architecture.md §4.6.2).
  EXPECT_EQ(
      build_schedule(model_preset("llama3-8b"), config_of({"communication_budget_rule=cap"}), 8).info.prefetch_depth,
      1);
  EXPECT_EQ(build_schedule(model_preset("llama3-8b"), config_of({"fsdp_double_buffer=true"}), 8).info.prefetch_depth,
            1);
  // A budget of 1 element gives S_AG = 1 // 2 = 0: "a small suggested_communication_unit_size disables prefetch".
  const Schedule none =
      build_schedule(model_preset("llama3-8b"), config_of({"suggested_communication_unit_size=1"}), 8);
  EXPECT_EQ(none.info.prefetch_depth, 0);
  // Without prefetch, each layer's forward all-gather is issued at its own pre-forward, after the previous forward.
  EXPECT_LT(first_op_named(none, "fwd.layer.0.mb0"), first_op_named(none, "ag.layer.1.mb0"));
}

TEST(MegatronBuilder, BackwardStartGathersInAscendingOrderNeededUnitLast) {
  // docs/architecture.md §4.6.3: the first pre-backward (layer.31) lists 31, 30, 29, 28 and issues them in ascending
  // bucket-ID order, so the unit backward needs first is gathered last.
  const Schedule s = build_schedule(model_preset("llama3-8b"), FsdpConfig{}, 8);
  const auto bwd_ags = ops_of(s, OpKind::all_gather, Phase::bwd, 0);
  ASSERT_GE(bwd_ags.size(), 4u);
  EXPECT_EQ(bwd_ags[0]->name, "ag.bwd.layer.28.mb0");
  EXPECT_EQ(bwd_ags[1]->name, "ag.bwd.layer.29.mb0");
  EXPECT_EQ(bwd_ags[2]->name, "ag.bwd.layer.30.mb0");
  EXPECT_EQ(bwd_ags[3]->name, "ag.bwd.layer.31.mb0");
  // The layers the output layer's pre-forward prefetched (0, 1, 2) are recycled unused at that first allocation.
  const OpId recycle = first_op_named(s, "ag_recycle.mb0");
  ASSERT_TRUE(recycle.valid());
  EXPECT_EQ(s.ops[recycle].frees.size(), 3u);
}

TEST(MegatronBuilder, CollectivesPerStrategy) {
  // Per step with 32 layers and 2 micro-batches (docs/architecture.md §4.6.5): ZeRO-3 gathers every layer in forward
  // and backward of every micro-batch and reduce-scatters every micro-batch; ZeRO-2 gathers once per step and
  // reduce-scatters every micro-batch; ZeRO-1 gathers once and reduce-scatters on the last; no_shard only all-reduces
  // on the last. With Megatron-LM's 40M bucket size the non-unit parameters are two bucket groups ([embedding] and
  // [final norm, output]); no_shard has no units and splits every parameter list at 40M (see below).
  const auto count = [](const Schedule& s, OpKind kind) {
    return std::count_if(s.ops.begin(), s.ops.end(), [&](const Op& op) { return op.kind == kind; });
  };
  const ModelSpec m = model_preset("llama3-8b");
  const Schedule z3 = build_schedule(m, config_of({"global_batch_size=16"}), 8);
  const Schedule z2 =
      build_schedule(m, config_of({"global_batch_size=16", "data_parallel_sharding_strategy=optim_grads"}), 8);
  const Schedule z1 =
      build_schedule(m, config_of({"global_batch_size=16", "data_parallel_sharding_strategy=optim"}), 8);
  const Schedule z0 =
      build_schedule(m, config_of({"global_batch_size=16", "data_parallel_sharding_strategy=no_shard"}), 8);
  // ZeRO-3: 2 non-unit groups once + 32 × 2 (fwd, bwd) × 2 micro-batches + the output layer's 3 wasted prefetches
  // per micro-batch (layers 0-2, recycled at the first backward gather) = 2 + 128 + 6.
  EXPECT_EQ(count(z3, OpKind::all_gather), 2 + 128 + 6);
  EXPECT_EQ(count(z3, OpKind::reduce_scatter), (32 + 2) * 2);  // every bucket group, every micro-batch
  EXPECT_EQ(count(z2, OpKind::all_gather), 34);                // once per step
  EXPECT_EQ(count(z2, OpKind::reduce_scatter), 34 * 2);
  EXPECT_EQ(count(z1, OpKind::all_gather), 34);
  EXPECT_EQ(count(z1, OpKind::reduce_scatter), 34);  // last micro-batch only
  EXPECT_EQ(count(z0, OpKind::all_gather), 0);
  // no_shard buckets in module order, closed once they reach 40M: [embedding 525M]; per layer [input norm, qkv 25.2M,
  // proj 16.8M] = 42M, [pre-MLP norm, fc1 117M], [fc2 58.7M]; [final norm, output 525M]: 1 + 3 × 32 + 1.
  EXPECT_EQ(count(z0, OpKind::all_reduce), 1 + 3 * 32 + 1);
}

TEST(MegatronBuilder, HsdpOuterCollectivesOnTheLastMicroBatch) {
  // docs/architecture.md §4.6.5: HSDP all-reduces each accumulated shard over the outer group on the last micro-batch;
  // HFSDP reduce-scatters instead, and all-gathers the outer slice before each unit all-gather of the first micro-batch
  // (forward and the backward re-gathers).
  const ModelSpec m = model_preset("llama3-8b");
  const std::vector<std::string> base{"nodes=2", "global_batch_size=32", "num_distributed_optimizer_instances=2"};
  const Schedule hsdp = build_schedule(m, config_of(base), 8);
  std::vector<std::string> h = base;
  h.push_back("outer_dp_sharding_strategy=optim");
  const Schedule hfsdp = build_schedule(m, config_of(h), 8);
  const auto outer = [](const Schedule& s, const std::string& prefix, int32_t mb) {
    return std::count_if(s.ops.begin(), s.ops.end(), [&](const Op& op) {
      return op.name.rfind(prefix, 0) == 0 && (mb < 0 || op.micro_batch == mb);
    });
  };
  EXPECT_EQ(outer(hsdp, "outer_ar", 1), 34);  // 32 layers + [embedding] + [final norm, output]
  EXPECT_EQ(outer(hsdp, "outer_ar", 0), 0);
  EXPECT_EQ(outer(hfsdp, "outer_rs", 1), 34);
  EXPECT_EQ(outer(hfsdp, "outer_ag", 1), 0);
  // First micro-batch: every all-gather has its outer all-gather in front.
  const auto inner_ags_mb0 = std::count_if(hfsdp.ops.begin(), hfsdp.ops.end(), [](const Op& op) {
    return op.kind == OpKind::all_gather && op.micro_batch == 0 && op.name.rfind("ag", 0) == 0;
  });
  EXPECT_EQ(outer(hfsdp, "outer_ag", 0), inner_ags_mb0);
}

TEST(MegatronBuilder, FullRecomputeRegathersEachLayer) {
  // Per-layer full recompute: each layer's backward first re-runs its forward (32 recompute ops per micro-batch);
  // the re-gather for the recompute is the backward gather (2 all-gathers per layer per micro-batch).
  const Schedule s = build_schedule(model_preset("llama3-8b"), config_of({"recompute_granularity=full"}), 8);
  EXPECT_EQ(ops_of(s, OpKind::compute, Phase::recompute, 0).size(), 32u);
  const auto unit_ags = std::count_if(s.ops.begin(), s.ops.end(), [](const Op& op) {
    return op.kind == OpKind::all_gather && op.unit >= 1 && op.unit <= 32 && op.phase != Phase::fwd;
  });
  EXPECT_EQ(unit_ags, 32);
}

TEST(Fsdp2Builder, CopyInAllGatherCopyOutAndRootKeptForBackward) {
  // The plain two-level wrapping: each layer, then the root holding embedding, final norm and output.
  const Schedule s =
      build_schedule(model_preset("llama3-8b"),
                     config_of({"implementation=fsdp2", "fsdp2_wrap=blocks_and_root", "global_batch_size=16"}), 8);
  ASSERT_TRUE(s.stream_index("ag_copy_in").valid());
  EXPECT_EQ(s.streams[(s.stream_index("ag")).index()].priority, -1);
  // Per micro-batch: the root is gathered once (kept through backward); each layer in forward and in backward.
  const auto ag =
      ops_of(s, OpKind::all_gather, Phase::fwd, 0).size() + ops_of(s, OpKind::all_gather, Phase::bwd, 0).size();
  EXPECT_EQ(ag, 1u + 2u * 32u);
  // One reduce-scatter per group per micro-batch, reducing with ncclAvg.
  const auto rs = ops_of(s, OpKind::reduce_scatter, Phase::bwd, 1);
  EXPECT_EQ(rs.size(), 33u);
  EXPECT_EQ(rs.front()->reduce_op, ReduceOp::avg);
  // Every all-gather is preceded by its copy-in and followed by a copy-out on the compute stream.
  const auto copies = ops_of(s, OpKind::copy, Phase::fwd, 0);
  const auto copy_outs =
      std::count_if(copies.begin(), copies.end(), [](const Op* op) { return op->name.rfind("ag_copy_out", 0) == 0; });
  EXPECT_EQ(copy_outs, 33);
}

TEST(Fsdp2Builder, CopyInCastsIntoATemporaryThenCopiesIntoTheFlatOutput) {
  // _fsdp_collectives.py: with MixedPrecisionPolicy(param_dtype=bf16) over fp32 shards, _get_param_all_gather_inputs
  // casts every shard into one bf16 temporary (_foreach_copy_) and all_gather_copy_in copies that into the flat
  // output: read 4 + write 2, then read 2 + write 2 bytes per shard element. A Llama-3-8B layer holds 218,112,000
  // parameters (2 · 4096² + 2 · 4096 · 1024 + 3 · 4096 · 14336 + 2 · 4096); padded to whole 14,336-element rows over
  // 8 ranks, each rank's shard is ceil(218,112,000 / (8 · 14,336)) · 14,336 = 27,267,072 elements.
  const auto copy_in_of = [](const std::string& main_params) {
    const Schedule s = build_schedule(
        model_preset("llama3-8b"),
        config_of({"implementation=fsdp2", "global_batch_size=8", "main_params_dtype=" + main_params}), 8);
    return s.ops[first_op_named(s, "ag_copy_in.layer.0.mb0")];
  };
  const Op cast = copy_in_of("fp32");
  EXPECT_EQ(cast.bytes_touched, 27'267'072LL * (4 + 2 + 2 + 2));
  ASSERT_EQ(cast.allocs.size(), 2u);  // the flat output and the temporary, which the copy-in frees
  ASSERT_EQ(cast.frees.size(), 1u);
  EXPECT_EQ(cast.frees[0], cast.allocs[1]);
  // bf16 shards are the all-gather inputs themselves: one copy, no temporary.
  const Op copy = copy_in_of("auto");
  EXPECT_EQ(copy.bytes_touched, 27'267'072LL * (2 + 2));
  EXPECT_EQ(copy.allocs.size(), 1u);
}

TEST(Fsdp2Builder, TheFirstReductionMakesTheGradAViewAndACastOnlyWhenTheDtypesDiffer) {
  // foreach_reduce: the reduce-scatter output becomes .grad as it is when it is in the shard's dtype (no kernel); a
  // bf16 reduction over fp32 shards is cast first (read 2, write 4 bytes per element of the 27,267,072-element shard);
  // the second micro-batch adds to .grad (read 4 + 4, write 4).
  const auto accum = [](const std::string& reduce, int mb) {
    const Schedule s = build_schedule(
        model_preset("llama3-8b"),
        config_of({"implementation=fsdp2", "global_batch_size=16", "grad_comm_dtype=" + reduce}), 8);
    return s.ops[first_op_named(s, "grad_accum.layer.0.mb" + std::to_string(mb))].bytes_touched;
  };
  EXPECT_EQ(accum("fp32", 0), 0);
  EXPECT_EQ(accum("bf16", 0), 27'267'072LL * (2 + 4));
  EXPECT_EQ(accum("fp32", 1), 27'267'072LL * 3 * 4);
}

TEST(Fsdp2Builder, TorchtitanWrapsEmbeddingAloneAndNormWithOutput) {
  // torchtitan/distributed/fsdp.py @ b5bcd76c: fully_shard(tok_embeddings), each block, fully_shard([norm, lm_head],
  // reshard_after_forward=False), then the parameter-less root; reduce_dtype float32.
  const Schedule s =
      build_schedule(model_preset("llama3-8b"), config_of({"implementation=fsdp2", "global_batch_size=16"}), 8);
  // Forward gathers embedding, 32 layers and [norm, output]; backward re-gathers the 32 layers and the embedding
  // (resharded after forward) but not [norm, output].
  EXPECT_EQ(ops_of(s, OpKind::all_gather, Phase::fwd, 0).size(), 34u);
  const auto bwd_ags = ops_of(s, OpKind::all_gather, Phase::bwd, 0);
  EXPECT_EQ(bwd_ags.size(), 33u);
  EXPECT_EQ(bwd_ags.back()->name, "ag.bwd.embedding.mb0");  // prefetched at layer.0's pre-backward
  // [norm, output] is reduce-scattered right after its own backward, before layer.31's backward; in FP32.
  const auto rs = ops_of(s, OpKind::reduce_scatter, Phase::bwd, 0);
  ASSERT_EQ(rs.size(), 34u);
  EXPECT_EQ(rs.front()->name, "rs.output.mb0");
  EXPECT_LT(rs.front()->id, first_op_named(s, "bwd.layer.31.mb0"));
  EXPECT_EQ(rs.front()->dtype, DType::fp32);
  EXPECT_EQ(rs.back()->name, "rs.embedding.mb0");
  // The root's pre-forward of micro-batch 1 makes the copy-in stream wait on everything the compute stream was
  // given so far (FSDPState._root_pre_forward): the embedding's all-gather cannot overlap micro-batch 0's tail.
  const OpId copy_in = first_op_named(s, "ag_copy_in.embedding.mb1");
  ASSERT_TRUE(copy_in.valid());
  OpId last_compute_before;
  for (const Op& op : s.ops) {
    if (op.id < copy_in && op.stream == s.stream_index("compute")) last_compute_before = op.id;
  }
  const auto& deps = s.ops[copy_in].deps;
  EXPECT_NE(std::find(deps.begin(), deps.end(), last_compute_before), deps.end());
}

TEST(Fsdp2Builder, TorchtitansChunkedLossReducesTheOutputGradientInTheForward) {
  // ChunkedLossWrapper (torchtitan/components/loss.py @ b5bcd76c): lm_head's backward runs chunk by chunk inside the
  // loss's forward, gradient sync is re-enabled for the last chunk, and lm_head.reshard() follows the loop; the
  // decoder's backward then meets the final norm, whose pre-backward gathers [norm, lm_head] again.
  const Schedule s = build_schedule(model_preset("llama3-8b"),
                                    config_of({"implementation=fsdp2", "loss_implementation=eager_fp32",
                                               "loss_chunked_backward=true", "global_batch_size=16"}),
                                    8);
  const auto fwd_rs = ops_of(s, OpKind::reduce_scatter, Phase::fwd, 0);
  ASSERT_EQ(fwd_rs.size(), 1u);
  EXPECT_EQ(fwd_rs.front()->name, "rs.output.mb0");
  EXPECT_GT(fwd_rs.front()->id, first_op_named(s, "fwd.output.mb0"));
  EXPECT_EQ(ops_of(s, OpKind::reduce_scatter, Phase::bwd, 0).size(), 33u);  // the 32 layers and the embedding
  // The forward op runs all three of the projection's GEMMs and writes its unsharded gradient (128,256 × 4,096
  // + 4,096 norm weights, bf16); the backward op runs none and writes no gradient.
  const Op& fwd = s.ops[first_op_named(s, "fwd.output.mb0")];
  EXPECT_EQ(fwd.gemms.size(), 3u);
  int64_t grad_bytes = 0;
  for (const BufferId b : fwd.allocs) {
    if (s.buffers[b].name == "grads.output.mb0") grad_bytes = s.buffers[b].size_bytes;
  }
  EXPECT_EQ(grad_bytes, (int64_t{128'256} * 4096 + 4096) * 2);
  const Op& bwd = s.ops[first_op_named(s, "bwd.output.mb0")];
  EXPECT_TRUE(bwd.gemms.empty());
  for (const BufferId b : bwd.allocs) EXPECT_NE(s.buffers[b].category, BufferCategory::unsharded_grad);
  // Backward gathers [norm, output] again (without the chunked loss it stays gathered from the forward).
  const auto bwd_ags = ops_of(s, OpKind::all_gather, Phase::bwd, 0);
  EXPECT_EQ(bwd_ags.size(), 34u);
  EXPECT_EQ(bwd_ags.front()->name, "ag.bwd.output.mb0");
  EXPECT_NO_THROW(validate_or_throw(s, "chunked loss"));
}

TEST(Fsdp2Builder, HsdpAccumulatesOnTheAllReduceStreamAndCollectivesQueueOnTheirGroup) {
  // _fsdp_collectives.py foreach_reduce: the reduce-scatter event is recorded right after the reduce-scatter; under
  // HSDP the all-reduce and the cast/accumulate run on the all-reduce stream, and the next group's post-backward waits
  // only on the reduce-scatter event.
  const Schedule s = build_schedule(
      model_preset("llama3-8b"),
      config_of({"implementation=fsdp2", "nodes=2", "global_batch_size=32", "num_distributed_optimizer_instances=2"}),
      8);
  const StreamId ar = s.stream_index("outer_ar");
  ASSERT_TRUE(ar.valid());
  for (const Op& op : s.ops) {
    if (op.name.rfind("grad_accum", 0) == 0) {
      EXPECT_EQ(op.stream, ar) << op.name;
    }
    if (op.name.rfind("rs_wait", 0) == 0) {
      ASSERT_EQ(op.deps.size(), 1u);
      EXPECT_EQ(s.ops[op.deps.front()].kind, OpKind::reduce_scatter) << op.name;
    }
  }
  // All-gathers and reduce-scatters share the data-parallel mesh's process group: the backward all-gather issued
  // after layer.31's reduce-scatter waits for it.
  const Op& ag = s.ops[first_op_named(s, "ag.bwd.layer.29.mb0")];
  EXPECT_TRUE(std::any_of(ag.deps.begin(), ag.deps.end(), [&](OpId d) { return s.ops[d].name == "rs.layer.31.mb0"; }));
}

TEST(Fsdp2Builder, NoSyncAccumulationKeepsUnshardedFp32GradientsUntilTheLastMicroBatch) {
  // FSDP2 set_requires_gradient_sync(False) on micro-batch 0 of 2: no reduce-scatter; each group's unsharded gradient
  // is kept in the reduce dtype (FP32, torchtitan's) until the last micro-batch reduces it. Llama-3-8B on 8 GPUs,
  // groups padded per parameter to 8 × the largest row: embedding 525,336,576 (exact), 32 layers × 218,136,576, [norm,
  // output] 525,340,672 → 525,369,344: 8,031,076,352 elements × 4 B = 32,124,305,408 B, all alive at once when
  // micro-batch 1's backward starts.
  const Schedule s =
      build_schedule(model_preset("llama3-8b"),
                     config_of({"implementation=fsdp2", "global_batch_size=16", "gradient_sync=last_micro_batch"}), 8);
  int64_t accumulated = 0;
  for (const Buffer& b : s.buffers) {
    if (b.name.rfind("grads.accumulated.", 0) == 0) accumulated += b.size_bytes;
  }
  EXPECT_EQ(accumulated, 8'031'076'352LL * 4);
  EXPECT_TRUE(validate(s).empty());
  EXPECT_TRUE(ops_of(s, OpKind::reduce_scatter, Phase::bwd, 0).empty());
  EXPECT_EQ(ops_of(s, OpKind::reduce_scatter, Phase::bwd, 1).size(), 34u);
  // Megatron-FSDP reduce-scatters every micro-batch under optim_grads_params: the setting is refused there.
  EXPECT_NE(error_of([] {
              build_schedule(model_preset("llama3-8b"), config_of({"gradient_sync=last_micro_batch"}), 8);
            }).find("Megatron-FSDP reduce-scatters every micro-batch"),
            std::string::npos);
}

TEST(Builders, ActivationOffloadCopiesEachOffloadedLayer) {
  // Default: every decoder layer but the last is offloaded: 31 device→host and 31 host→device copies per micro-batch.
  const Schedule s = build_schedule(model_preset("llama3-8b"), config_of({"cpu_offloading_activations=true"}), 8);
  const auto d2h = std::count_if(s.ops.begin(), s.ops.end(),
                                 [](const Op& op) { return op.kind == OpKind::copy && op.send_bytes > 0; });
  const auto h2d = std::count_if(s.ops.begin(), s.ops.end(),
                                 [](const Op& op) { return op.kind == OpKind::copy && op.recv_bytes > 0; });
  EXPECT_EQ(d2h, 31);
  EXPECT_EQ(h2d, 31);
}

// Async TP: each forward TP all-gather moves whole to the tp_async stream after the op that produced its input; each
// forward reduce-scatter keeps the last of its tp chunks on the compute stream and sends the rest on tp_async; the op
// after the unit's forward waits for them; the backward's TP collectives stay on the compute stream, and every
// collective's bytes add up to the synchronous schedule's.
TEST(Builders, AsyncTpOverlapsTheForwardTpCollectives) {
  const std::vector<std::string> sets{"implementation=fsdp2", "tp=8", "nodes=2", "global_batch_size=16"};
  std::vector<std::string> async_sets = sets;
  async_sets.push_back("async_tp=true");
  const Schedule sync = build_schedule(model_preset("llama3-8b"), config_of(sets), 8);
  const Schedule async = build_schedule(model_preset("llama3-8b"), config_of(async_sets), 8);
  ASSERT_TRUE(validate(async).empty()) << validate(async).front();
  const auto find = [](const Schedule& s, const std::string& name) -> const Op& {
    const auto it = std::find_if(s.ops.begin(), s.ops.end(), [&](const Op& op) { return op.name == name; });
    EXPECT_NE(it, s.ops.end()) << name;
    return *it;
  };
  const auto stream_of = [](const Schedule& s, const Op& op) { return s.streams[op.stream].name; };
  // The attention block's all-gather: all of it beside the compute, after the op before it on the compute stream.
  const Op& ag = find(sync, "tp_ag_attn.layer.3.mb0");
  const Op& ag_async = find(async, "tp_ag_attn.async.layer.3.mb0");
  EXPECT_EQ(stream_of(async, ag_async), "tp_async");
  EXPECT_EQ(ag_async.send_bytes, ag.send_bytes);
  EXPECT_EQ(ag_async.recv_bytes, ag.recv_bytes);
  ASSERT_EQ(ag_async.deps.size(), 1U);
  EXPECT_EQ(stream_of(async, async.ops[ag_async.deps[0]]), "compute");
  EXPECT_FALSE(std::any_of(async.ops.begin(), async.ops.end(),
                           [](const Op& op) { return op.name == "tp_ag_attn.layer.3.mb0"; }));
  // Its reduce-scatter: 1/8 of the shard on the compute stream, 7/8 on tp_async.
  const Op& rs = find(sync, "tp_rs_attn.layer.3.mb0");
  const Op& rs_last = find(async, "tp_rs_attn.layer.3.mb0");
  const Op& rs_rest = find(async, "tp_rs_attn.async.layer.3.mb0");
  EXPECT_EQ(stream_of(async, rs_last), "compute");
  EXPECT_EQ(rs_last.recv_bytes, rs.recv_bytes / 8);
  EXPECT_EQ(rs_last.send_bytes, rs.recv_bytes / 8 * 8);
  EXPECT_EQ(rs_rest.recv_bytes + rs_last.recv_bytes, rs.recv_bytes);
  EXPECT_EQ(rs_rest.send_bytes + rs_last.send_bytes, rs.send_bytes);
  EXPECT_EQ(stream_of(async, rs_rest), "tp_async");
  // The forward, then the join waiting for the layer's overlapped collectives.
  const Op& fwd = find(async, "fwd.layer.3.mb0");
  const Op& join = find(async, "overlap_join.layer.3.mb0");
  EXPECT_EQ(join.id.value(), fwd.id.value() + 1);
  EXPECT_EQ(join.stream, fwd.stream);
  EXPECT_EQ(join.deps.size(), 4U);  // two all-gathers and two reduce-scatter remainders
  EXPECT_NE(std::find(join.deps.begin(), join.deps.end(), ag_async.id), join.deps.end());
  // Backward: as without async TP.
  EXPECT_EQ(stream_of(async, find(async, "tp_rs_attn_grad.layer.3.mb0")), "compute");
  EXPECT_EQ(find(async, "tp_rs_attn_grad.layer.3.mb0").send_bytes,
            find(sync, "tp_rs_attn_grad.layer.3.mb0").send_bytes);
  // Every collective's bytes are the synchronous schedule's.
  const auto total = [](const Schedule& s) {
    int64_t bytes = 0;
    for (const Op& op : s.ops) bytes += is_collective(op.kind) ? op.send_bytes + op.recv_bytes : 0;
    return bytes;
  };
  EXPECT_EQ(total(async), total(sync));
}

}  // namespace
}  // namespace fsdpsim
