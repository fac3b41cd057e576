#include "config/fsdp_config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "config/parallel_layout.h"
#include "model/model.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

// The message resolving this configuration file (j.yaml) for Llama-3-8B on 8-GPU nodes fails with.
std::string refused_for_llama8b(const std::string& yaml) {
  return error_of([&] {
    FsdpConfig c = parse_config_yaml(yaml, "j.yaml");
    (void)resolve_layout(model_preset("llama3-8b"), c, 8);
  });
}

TEST(Config, DefaultsFollowMegatronFsdp) {
  const FsdpConfig c;
  EXPECT_EQ(c.data_parallel_sharding_strategy, ShardingStrategy::optim_grads_params);
  EXPECT_EQ(main_param_bytes(c), 4);           // FP32 main weights
  EXPECT_EQ(main_grad_dtype(c), DType::bf16);  // default: the parameter dtype (docs/architecture.md §4.6.6, 2026-07+)
  EXPECT_EQ(grad_comm_dtype(c), DType::bf16);
  FsdpConfig fp8 = c;
  fp8.param_dtype = DType::fp8;
  EXPECT_EQ(main_grad_dtype(fp8), DType::bf16);  // BF16 grads for FP8 parameters
}

TEST(Config, HostDispatchAutoIsCompiledOnlyForTorchCompile) {
  FsdpConfig c;
  EXPECT_EQ(resolve_host_dispatch(c), HostDispatch::eager);  // Megatron-FSDP: TE modules launched from Python
  apply_override(c, "implementation=fsdp2");
  EXPECT_EQ(resolve_host_dispatch(c), HostDispatch::compiled);  // fused_elementwise under FSDP2 is torch.compile
  apply_override(c, "fused_elementwise=false");
  EXPECT_EQ(resolve_host_dispatch(c), HostDispatch::eager);
  apply_override(c, "host_dispatch=cuda_graphs");
  EXPECT_EQ(resolve_host_dispatch(c), HostDispatch::cuda_graphs);
  EXPECT_THROW(apply_override(c, "host_dispatch=jit"), ConfigError);
}

TEST(Config, YamlKeysAndOrigins) {
  const FsdpConfig c = parse_config_yaml("tp: 2\nnodes: 4\nfsdp_double_buffer: true\n", "job.yaml");
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(c.nodes, 4);
  EXPECT_TRUE(c.fsdp_double_buffer);
  EXPECT_EQ(c.where("nodes").str(), "job.yaml:2:8");
  EXPECT_EQ(c.where("cp").str(), "<default>");
}

TEST(Config, UnknownKeyNamesFileLineAndSuggestion) {
  const std::string m = error_of([] { parse_config_yaml("tp: 2\nmicro_batch_sise: 2\n", "job.yaml"); });
  EXPECT_NE(m.find("job.yaml:2:1: 'micro_batch_sise': unknown key (did you mean 'micro_batch_size'?)"),
            std::string::npos)
      << m;
}

TEST(Config, WrongTypeAndRange) {
  EXPECT_NE(error_of([] {
              parse_config_yaml("tp: two\n", "j.yaml");
            }).find("j.yaml:1:5: 'tp': expected a whole number, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_config_yaml("nodes: 0\n", "j.yaml");
            }).find("'nodes': value 0 is out of range (it must be between 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_config_yaml("micro_batch_size: -1\n", "j.yaml"); }).find("'micro_batch_size'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_config_yaml("data_parallel_sharding_strategy: zero3\n", "j.yaml");
            }).find("valid: no_shard, optim, optim_grads, optim_grads_params"),
            std::string::npos);
}

TEST(Config, SetOverridesAndErrors) {
  FsdpConfig c;
  apply_override(c, "nodes=8");
  apply_override(c, "recompute_granularity=full");
  EXPECT_EQ(c.nodes, 8);
  EXPECT_EQ(c.recompute_granularity, Recompute::full);
  EXPECT_EQ(c.where("nodes").file, "<--set nodes=8>");
  EXPECT_NE(error_of([&] {
              apply_override(c, "nodez=8");
            }).find("'nodez': unknown configuration key (did you mean 'nodes'?)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_override(c, "nodes"); }).find("expected key=value"), std::string::npos);
}

TEST(Config, PrintedConfigParsesBack) {
  FsdpConfig c;
  apply_override(c, "tp=4");
  apply_override(c, "exp_avg_sq_dtype=bf16");
  const FsdpConfig back = parse_config_yaml(config_to_yaml(c), "printed.yaml");
  EXPECT_EQ(config_to_yaml(back), config_to_yaml(c));
}

TEST(Config, PipelineKeysParseAndPrint) {
  const FsdpConfig c = parse_config_yaml(
      "pp: 8\nvirtual_pipeline_stages: 4\npipeline_schedule: interleaved_1f1b\nfirst_stage_layers: 3\n"
      "last_stage_layers: 5\naccount_for_embedding_in_pipeline_split: true\n"
      "account_for_loss_in_pipeline_split: true\n",
      "job.yaml");
  EXPECT_EQ(c.pp, 8);
  EXPECT_EQ(c.virtual_pipeline_stages, 4);
  EXPECT_EQ(c.pipeline_schedule, PipelineSchedule::interleaved_1f1b);
  EXPECT_EQ(c.first_stage_layers, 3);
  EXPECT_EQ(c.last_stage_layers, 5);
  EXPECT_TRUE(c.account_for_embedding_in_pipeline_split);
  EXPECT_TRUE(c.account_for_loss_in_pipeline_split);
  EXPECT_EQ(c.where("pipeline_schedule").str(), "job.yaml:3:20");
  const std::string printed = config_to_yaml(c);
  for (const char* line :
       {"\npp: 8  # pipeline-parallel stages (outermost in Megatron's tp-cp-ep-dp-pp order)\n",
        "\nvirtual_pipeline_stages: 4  #", "\npipeline_schedule: interleaved_1f1b  #", "\nfirst_stage_layers: 3  #",
        "\nlast_stage_layers: 5  #", "\naccount_for_embedding_in_pipeline_split: true  #",
        "\naccount_for_loss_in_pipeline_split: true  #"}) {
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  }
  EXPECT_EQ(config_to_yaml(parse_config_yaml(printed, "printed.yaml")), printed);
  EXPECT_NE(printed.find("\npipeline_layout: \"\"  #"), std::string::npos) << printed;  // empty: the split keys
  // A Megatron layout string reads back as written; a malformed one names its line and character.
  const FsdpConfig laid = parse_config_yaml("pp: 4\npipeline_layout: Etttt|(tttt|)*14tL\n", "job.yaml");
  EXPECT_EQ(laid.pipeline_layout, "Etttt|(tttt|)*14tL");
  EXPECT_EQ(parse_config_yaml(config_to_yaml(laid), "printed.yaml").pipeline_layout, laid.pipeline_layout);
  EXPECT_HAS(error_of([] { parse_config_yaml("pp: 4\npipeline_layout: Et|tx|L\n", "job.yaml"); }),
             "job.yaml:2:18: 'pipeline_layout': unknown layer character 'x' at character 5");
  // The defaults: no pipeline, Megatron's 1F1B, an even split.
  const std::string defaults = config_to_yaml(FsdpConfig{});
  for (const char* line : {"\npp: 1  #", "\nvirtual_pipeline_stages: 1  #", "\npipeline_schedule: 1f1b  #",
                           "\nfirst_stage_layers: 0  #", "\naccount_for_loss_in_pipeline_split: false  #"}) {
    EXPECT_NE(defaults.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(to_string(PipelineSchedule::gpipe), "gpipe");
  EXPECT_EQ(to_string(PipelineSchedule::one_f_one_b), "1f1b");
  EXPECT_EQ(to_string(PipelineSchedule::interleaved_1f1b), "interleaved_1f1b");
  FsdpConfig set;
  apply_override(set, "pipeline_schedule=gpipe");
  apply_override(set, "pp=4");
  EXPECT_EQ(set.pipeline_schedule, PipelineSchedule::gpipe);
  EXPECT_EQ(set.pp, 4);
}

TEST(Config, PipelineKeysComeRightAfterEtp) {
  std::vector<std::string> names;
  for (const auto& k : config_keys()) names.push_back(k.name);
  const auto etp = std::find(names.begin(), names.end(), "etp");
  ASSERT_NE(etp, names.end());
  EXPECT_EQ(std::vector<std::string>(etp + 1, etp + 10),
            (std::vector<std::string>{"pp", "virtual_pipeline_stages", "pipeline_schedule", "first_stage_layers",
                                      "last_stage_layers", "account_for_embedding_in_pipeline_split",
                                      "account_for_loss_in_pipeline_split", "overlap_p2p_comm", "pipeline_layout"}));
  EXPECT_EQ(config_keys()[static_cast<size_t>(etp - names.begin()) + 3].type,
            "gpipe|1f1b|interleaved_1f1b|zbv|dualpipev");
}

TEST(Config, PipelineKeyErrorsNameTheKey) {
  EXPECT_HAS(error_of([] { parse_config_yaml("pp: 0\n", "j.yaml"); }),
             "j.yaml:1:5: 'pp': value 0 is out of range (it must be between 1 and 1024)");
  EXPECT_HAS(error_of([] { parse_config_yaml("virtual_pipeline_stages: 65\n", "j.yaml"); }),
             "'virtual_pipeline_stages': value 65 is out of range (it must be between 1 and 64)");
  EXPECT_HAS(error_of([] { parse_config_yaml("pipeline_schedule: zb1p\n", "j.yaml"); }), "'pipeline_schedule'");
  EXPECT_HAS(error_of([] { parse_config_yaml("pipeline_schedule: zb1p\n", "j.yaml"); }),
             "valid: gpipe, 1f1b, interleaved_1f1b, zbv, dualpipev");
  EXPECT_HAS(error_of([] { parse_config_yaml("first_stage_layers: -1\n", "j.yaml"); }), "'first_stage_layers'");
  EXPECT_HAS(error_of([] { parse_config_yaml("last_stage_layers: many\n", "j.yaml"); }),
             "'last_stage_layers': expected a whole number");
  EXPECT_HAS(error_of([] { parse_config_yaml("account_for_loss_in_pipeline_split: 2\n", "j.yaml"); }),
             "'account_for_loss_in_pipeline_split'");
  FsdpConfig c;
  EXPECT_HAS(error_of([&] { apply_override(c, "pp=two"); }), "<--set pp=two>: 'pp': expected a whole number");
  EXPECT_HAS(error_of([&] { apply_override(c, "pipeline_shedule=gpipe"); }), "did you mean 'pipeline_schedule'?");
}

TEST(Layout, GroupSizesFromWorldAndConfig) {
  // 4 nodes × 8 GPUs = 32; tp 2 → dp 16; 2 HSDP replicas → dense shard group 8.
  FsdpConfig c =
      parse_config_yaml("nodes: 4\ntp: 2\nnum_distributed_optimizer_instances: 2\nglobal_batch_size: 64\n", "j.yaml");
  const ParallelLayout l = resolve_layout(model_preset("llama3-8b"), c, 8);
  EXPECT_EQ(l.world_size, 32);
  EXPECT_EQ(l.dp, 16);
  EXPECT_EQ(l.dense_shard, 8);
  EXPECT_EQ(l.outer, 2);
  EXPECT_EQ(l.micro_batches, 4);  // 64 sequences / (micro-batch 1 × dp 16)
}

TEST(Layout, ForcedOptions) {
  FsdpConfig c = parse_config_yaml("nccl_ub: true\noverlap_param_gather: false\n", "j.yaml");
  (void)resolve_layout(model_preset("llama3-8b"), c, 8);
  EXPECT_TRUE(c.fsdp_double_buffer);    // nccl_ub needs persistent buffers
  EXPECT_TRUE(c.overlap_param_gather);  // optim_grads_params forces both overlaps
}

TEST(Layout, Fsdp2UnderPipelineReducesOnTheLastMicroBatch) {
  // Unset, gradient_sync follows torch.distributed.pipelining (no sync until the last backward) …
  FsdpConfig c = parse_config_yaml("implementation: fsdp2\npp: 2\n", "j.yaml");
  (void)resolve_layout(model_preset("llama3-8b"), c, 8);
  EXPECT_EQ(c.gradient_sync, GradSync::last_micro_batch);
  // … and an explicit every_micro_batch is refused, not silently overridden.
  const std::string m = error_of([] {
    FsdpConfig every = parse_config_yaml("implementation: fsdp2\npp: 2\ngradient_sync: every_micro_batch\n", "j.yaml");
    (void)resolve_layout(model_preset("llama3-8b"), every, 8);
  });
  EXPECT_HAS(m, "j.yaml:3:16: 'gradient_sync'");
  EXPECT_HAS(m, "set_requires_gradient_sync(False)");
}

// Which library casts FP8 operands follows fp8_library, and auto picks torchao only for torchao's own recipes; a
// recipe the library does not have, or torchao under Megatron-FSDP, is refused at the key that was set.
TEST(Layout, Fp8LibraryPicksTheCastKernels) {
  const auto casts_of = [](const std::string& yaml) {
    FsdpConfig c = parse_config_yaml("implementation: fsdp2\nfp8_compute: true\n" + yaml, "j.yaml");
    return resolve_layout(model_preset("llama3-8b"), c, 8).shape.fp8_casts;
  };
  EXPECT_EQ(casts_of(""), Fp8Casts::transformer_engine);
  EXPECT_EQ(casts_of("fp8_recipe: tensorwise\n"), Fp8Casts::transformer_engine);
  EXPECT_EQ(casts_of("fp8_library: torchao\n"), Fp8Casts::torchao_tensorwise);
  EXPECT_EQ(casts_of("fp8_recipe: rowwise\n"), Fp8Casts::torchao_rowwise);
  EXPECT_EQ(casts_of("fp8_recipe: rowwise_with_gw_hp\n"), Fp8Casts::torchao_rowwise_with_gw_hp);
  EXPECT_EQ(casts_of("fp8_recipe: mxfp8\nfp8_library: torchao\n"), Fp8Casts::torchao_mxfp8);
  EXPECT_HAS(refused_for_llama8b("implementation: fsdp2\nfp8_recipe: rowwise\nfp8_library: transformer_engine\n"),
             "j.yaml:2:13: 'fp8_recipe': rowwise is torchao's float8 recipe");
  EXPECT_HAS(refused_for_llama8b("implementation: fsdp2\nfp8_recipe: delayed\nfp8_library: torchao\n"),
             "'fp8_recipe': delayed is a Transformer Engine recipe");
  EXPECT_HAS(refused_for_llama8b("fp8_recipe: rowwise_with_gw_hp\n"),
             "j.yaml:1:13: 'fp8_recipe': Megatron-FSDP trains FP8 through Transformer Engine");
  EXPECT_HAS(refused_for_llama8b("fp8_library: torchao\n"), "j.yaml:1:14: 'fp8_library': Megatron-FSDP trains FP8");
}

// What FP8 linears save follows the library unless fp8_saved_inputs says otherwise; torchao's saving an FP8 input,
// or the key without FP8 compute, is refused at the key.
TEST(Layout, Fp8SavedInputsFollowTheLibrary) {
  const auto saved_in_fp8 = [](const std::string& yaml) {
    FsdpConfig c = parse_config_yaml(yaml, "j.yaml");
    return resolve_layout(model_preset("llama3-8b"), c, 8).shape.fp8_saved_inputs;
  };
  EXPECT_TRUE(saved_in_fp8("fp8_compute: true\n"));  // Megatron-FSDP: Transformer Engine
  EXPECT_TRUE(saved_in_fp8("param_dtype: fp8\n"));
  EXPECT_FALSE(saved_in_fp8("fp8_compute: false\n"));
  EXPECT_FALSE(saved_in_fp8("implementation: fsdp2\nfp8_compute: true\nfp8_library: torchao\n"));
  EXPECT_FALSE(saved_in_fp8("fp8_compute: true\nfp8_saved_inputs: high_precision\n"));
  EXPECT_TRUE(saved_in_fp8("implementation: fsdp2\nfp8_compute: true\nfp8_saved_inputs: fp8\n"));
  EXPECT_HAS(
      refused_for_llama8b("implementation: fsdp2\nfp8_compute: true\nfp8_library: torchao\nfp8_saved_inputs: fp8\n"),
      "j.yaml:4:19: 'fp8_saved_inputs': torchao's Float8Linear saves the high-precision input");
  EXPECT_HAS(refused_for_llama8b("fp8_saved_inputs: high_precision\n"),
             "j.yaml:1:19: 'fp8_saved_inputs': chooses what FP8 linears save, but nothing computes in FP8");
}

// Layers kept in BF16 under FP8 need FP8, fit in the model, and are refused where FSDP2 would gather them in float8.
TEST(Layout, Bf16LayersUnderFp8) {
  FsdpConfig ok =
      parse_config_yaml("fp8_compute: true\nfp8_bf16_layers_at_start: 1\nfp8_bf16_layers_at_end: 1\n", "j.yaml");
  const RankShape shape = resolve_layout(model_preset("llama3-8b"), ok, 8).shape;
  EXPECT_EQ(shape.bf16_layers_at_start, 1);
  EXPECT_EQ(shape.bf16_layers_at_end, 1);
  EXPECT_HAS(refused_for_llama8b("fp8_bf16_layers_at_start: 1\n"),
             "j.yaml:1:27: 'fp8_bf16_layers_at_start': keeps layers in BF16 under FP8, but nothing computes in FP8");
  EXPECT_HAS(refused_for_llama8b("fp8_compute: true\nfp8_bf16_layers_at_start: 20\nfp8_bf16_layers_at_end: 13\n"),
             "20 first and 13 last layers in BF16, but llama3-8b has 32 decoder layers");
  EXPECT_HAS(refused_for_llama8b("implementation: fsdp2\nparam_dtype: fp8\nfp8_bf16_layers_at_end: 1\n"),
             "'fp8_bf16_layers_at_end': FSDP2's float8 all-gather of a layer left in BF16 is not modelled");
}

TEST(Layout, ErrorsNameTheKeyWhereItWasSet) {
  const ModelSpec llama70 = model_preset("llama3-70b");
  std::string m = error_of([&] {
    FsdpConfig c = parse_config_yaml("nodes: 1\ntp: 3\n", "job.yaml");
    resolve_layout(llama70, c, 8);
  });
  EXPECT_NE(m.find("job.yaml:2:5: 'tp': world size 8 (nodes=1 × 8 GPUs) is not divisible by tp·cp = 3"),
            std::string::npos)
      << m;
  m = error_of([&] {
    FsdpConfig c = parse_config_yaml("nodes: 3\ntp: 3\n", "job.yaml");
    resolve_layout(llama70, c, 8);
  });
  EXPECT_NE(m.find("job.yaml:2:5: 'tp': tp=3 does not divide num_attention_heads=64"), std::string::npos) << m;
  m = error_of([&] {
    FsdpConfig c = parse_config_yaml("global_batch_size: 12\n", "job.yaml");
    resolve_layout(llama70, c, 8);
  });
  EXPECT_NE(m.find("job.yaml:1:20: 'global_batch_size': global_batch_size=12 is not a multiple of micro_batch_size × "
                   "dp = 1 × 8"),
            std::string::npos)
      << m;
  m = error_of([&] {
    FsdpConfig c = parse_config_yaml("ep: 2\n", "job.yaml");
    resolve_layout(llama70, c, 8);
  });
  EXPECT_NE(m.find("'ep': ep=2 but llama3-70b has no experts"), std::string::npos) << m;
  m = error_of([&] {
    FsdpConfig c =
        parse_config_yaml("outer_dp_sharding_strategy: optim\ndata_parallel_sharding_strategy: optim\n", "job.yaml");
    resolve_layout(llama70, c, 8);
  });
  EXPECT_NE(m.find("job.yaml:1:29: 'outer_dp_sharding_strategy': outer 'optim' (HFSDP) requires optim_grads_params"),
            std::string::npos)
      << m;
  m = error_of([&] {
    FsdpConfig c = parse_config_yaml("implementation: fsdp2\ndata_parallel_sharding_strategy: optim\n", "job.yaml");
    resolve_layout(llama70, c, 8);
  });
  EXPECT_NE(m.find("FSDP2 (fully_shard) always shards parameters"), std::string::npos) << m;
}

}  // namespace
}  // namespace fsdpsim
