#include "frontends/megatron_args.h"

#include <gtest/gtest.h>

#include "config/parallel_layout.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "builders/builder.h"
#include "schedule/summary.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

// Llama-3-70B written as Megatron-LM flags (Meta's published configuration), with the seed guide's FSDP flags.
const char* kLlama70bArgs = R"(torchrun --nproc-per-node 8 pretrain_gpt.py \
  --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 \
  --group-query-attention --num-query-groups 8 --vocab-size 128256 --swiglu \
  --untie-embeddings-and-output-weights --normalization RMSNorm --disable-bias-linear \
  --position-embedding-type rope --seq-length 8192 --max-position-embeddings 8192 \
  --micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 1 --bf16 \
  --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params --no-gradient-accumulation-fusion \
  --use-distributed-optimizer --ckpt-format fsdp_dtensor --calculate-per-token-loss \
  --init-model-with-meta-device --grad-reduce-in-bf16 --lr 1e-4 --train-iters 10)";

TEST(MegatronArgs, SplitsLikeAShell) {
  EXPECT_EQ(split_command_line("python x.py --a 1 \\\n --b 'two words' --c=\"3\""),
            (std::vector<std::string>{"--a", "1", "--b", "two words", "--c=3"}));
}

TEST(MegatronArgs, DefinesTheModelAndTheConfig) {
  FsdpConfig config;
  std::optional<ModelSpec> model;
  apply_megatron_args(kLlama70bArgs, config, model);
  ASSERT_TRUE(model.has_value());
  // Same architecture as the preset, so the same parameter count (70.55B).
  EXPECT_EQ(count_parameters(*model).total, count_parameters(model_preset("llama3-70b")).total);
  EXPECT_EQ(config.seq_length, 8192);
  EXPECT_EQ(config.global_batch_size, 128);
  EXPECT_TRUE(config.calculate_per_token_loss);
  EXPECT_TRUE(config.init_model_with_meta_device);
  // --grad-reduce-in-bf16 only clears accumulate_allreduce_grads_in_fp32, which Megatron-FSDP does not read.
  EXPECT_EQ(config.main_grads_dtype, "auto");
  // --no-gradient-accumulation-fusion as given; Megatron-LM's default for the left-out --overlap-grad-reduce.
  EXPECT_FALSE(config.gradient_accumulation_fusion);
  EXPECT_FALSE(config.overlap_grad_reduce);
  EXPECT_EQ(config.where("seq_length").file, "<megatron-args --seq-length seq_length=8192>");
}

TEST(MegatronArgs, SameScheduleAsThePresetJob) {
  FsdpConfig from_args;
  std::optional<ModelSpec> model;
  apply_megatron_args(kLlama70bArgs, from_args, model);
  apply_override(from_args, "nodes=8");
  FsdpConfig from_keys;
  for (const char* kv : {"nodes=8", "seq_length=8192", "global_batch_size=128", "calculate_per_token_loss=true",
                         "init_model_with_meta_device=true", "overlap_grad_reduce=false"}) {
    apply_override(from_keys, kv);
  }
  const Schedule a = build_schedule(*model, from_args, 8);
  const Schedule b = build_schedule(model_preset("llama3-70b"), from_keys, 8);
  EXPECT_EQ(a.ops.size(), b.ops.size());
  EXPECT_EQ(a.persistent_bytes(), b.persistent_bytes());
  EXPECT_EQ(schedule_stats(a).step_send_bytes, schedule_stats(b).step_send_bytes);
}

TEST(MegatronArgs, OverridesAPreset) {
  FsdpConfig config;
  std::optional<ModelSpec> model = model_preset("llama3-8b");
  apply_megatron_args("--num-layers 4 --tensor-model-parallel-size 2", config, model);
  EXPECT_EQ(model->num_layers, 4);
  EXPECT_EQ(model->hidden_size, 4096);
  EXPECT_EQ(config.tp, 2);
}

// --first-last-layers-bf16 keeps one layer at each end in BF16 unless the counts say otherwise; Megatron reads the
// counts only with it and only under FP8.
TEST(MegatronArgs, FirstAndLastLayersInBf16) {
  const auto layers = [](const std::string& args) {
    FsdpConfig config;
    std::optional<ModelSpec> model = model_preset("llama3-8b");
    const MegatronArgsRead read = apply_megatron_args(args, config, model);
    EXPECT_EQ(std::count(read.not_modelled.begin(), read.not_modelled.end(), "--first-last-layers-bf16"), 0);
    return std::pair{config.fp8_bf16_layers_at_start, config.fp8_bf16_layers_at_end};
  };
  EXPECT_EQ(layers("--fp8-format hybrid --first-last-layers-bf16"), (std::pair{1, 1}));
  EXPECT_EQ(layers("--fp8-format hybrid --first-last-layers-bf16 --num-layers-at-start-in-bf16 2 "
                   "--num-layers-at-end-in-bf16 0"),
            (std::pair{2, 0}));
  EXPECT_EQ(layers("--fp8-format hybrid --num-layers-at-start-in-bf16 2"), (std::pair{0, 0}));
  EXPECT_EQ(layers("--first-last-layers-bf16"), (std::pair{0, 0}));  // BF16 training: nothing to keep out of FP8
  FsdpConfig config;
  std::optional<ModelSpec> model = model_preset("llama3-8b");
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--fp8-format hybrid --first-last-layers-bf16 --num-layers-at-end-in-bf16 -1", config,
                                  model);
            }).find("--num-layers-at-end-in-bf16"),
            std::string::npos);
}

TEST(MegatronArgs, Errors) {
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--micro-batch-sise 2", c, m);
            }).find("'--micro-batch-sise': not a Megatron-LM flag (did you mean '--micro-batch-size'?)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--tensor-model-parallel-size two", c, m);
            }).find("'tp': expected a whole number, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout E|(t|)*3,m|m||L",
                                  c, m);
            }).find("'pipeline_layout': multi-token-prediction layers (m) are not modelled"),
            std::string::npos);
  std::optional<ModelSpec> none;
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--num-layers 2 --hidden-size 64 --num-attention-heads 4", c, none);
            }).find("'--vocab-size': the Megatron-LM arguments define a model but not --vocab-size"),
            std::string::npos);
}

TEST(MegatronArgs, ReductionAndOptimizerFlagsAsMegatronLmDefinesThem) {
  // megatron/training/arguments.py @ d98e8a64ddf3: the flag is --ddp-average-in-collective; --ddp-bucket-size and
  // --create-all-gather-group shape the buckets and communicators; --use-precision-aware-optimizer decouples the
  // grads; --fp8-recipe picks the transpose path; wgrad fusion is on unless --no-gradient-accumulation-fusion.
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  apply_megatron_args(
      "--ddp-average-in-collective --ddp-bucket-size 50000000 --create-all-gather-group "
      "--use-precision-aware-optimizer --fp8-recipe mxfp8 --overlap-grad-reduce",
      c, m);
  EXPECT_TRUE(c.average_in_collective);
  EXPECT_EQ(c.ddp_bucket_size, 50'000'000);
  EXPECT_TRUE(c.create_all_gather_group);
  EXPECT_TRUE(c.use_precision_aware_optimizer);
  EXPECT_EQ(c.fp8_recipe, Fp8Recipe::mxfp8);
  EXPECT_TRUE(c.gradient_accumulation_fusion);
  EXPECT_TRUE(c.overlap_grad_reduce);
  // A configuration file's setting stands where the script says nothing.
  FsdpConfig from_file = parse_config_yaml("gradient_accumulation_fusion: false\n", "job.yaml");
  apply_megatron_args("--micro-batch-size 1", from_file, m);
  EXPECT_FALSE(from_file.gradient_accumulation_fusion);
  // The name without the ddp- prefix is no Megatron-LM flag.
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--average-in-collective", c, m);
            }).find("did you mean '--ddp-average-in-collective'?"),
            std::string::npos);
  // --grad-reduce-in-bf16 changes nothing Megatron-FSDP reads.
  FsdpConfig plain, bf16;
  apply_megatron_args("--micro-batch-size 1", plain, m);
  apply_megatron_args("--micro-batch-size 1 --grad-reduce-in-bf16", bf16, m);
  EXPECT_EQ(config_to_yaml(plain), config_to_yaml(bf16));
}

// The plain list scripts/megatron_flags.py wrote from Megatron-LM's parser: "--flag arity" per line.
std::vector<std::pair<std::string, std::string>> parser_flags() {
  std::ifstream in(std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/megatron/arguments_flags.txt");
  std::vector<std::pair<std::string, std::string>> flags;
  std::string flag, arity;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    words >> flag >> arity;
    flags.emplace_back(flag, arity);
  }
  return flags;
}

TEST(MegatronArgs, EveryFlagOfMegatronLmsParserIsKnown) {
  // megatron/training/arguments.py @ d98e8a64ddf3, add_megatron_arguments: 877 flags. None may be refused as unknown
  // (a modelled flag may still refuse a placeholder value).
  const auto flags = parser_flags();
  ASSERT_GT(flags.size(), 800u);
  for (const auto& [flag, arity] : flags) {
    FsdpConfig c;
    std::optional<ModelSpec> m = model_preset("llama3-8b");
    const std::string args = flag + (arity == "none" ? "" : " 1");
    EXPECT_EQ(error_of([&] { apply_megatron_args(args, c, m); }).find("not a Megatron-LM flag"), std::string::npos)
        << flag;
  }
  // And every flag fsdpsim models is one of the parser's (a misspelt rule would never fire).
  std::set<std::string> names;
  for (const auto& [flag, arity] : flags) names.insert(flag);
  for (const auto& flag : modelled_megatron_flags()) EXPECT_TRUE(names.count(flag)) << flag;
}

TEST(MegatronArgs, AllProblemsOfACommandLineInOneMessage) {
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  const std::string message = error_of([&] {
    apply_megatron_args(
        "--lr 1e-4 --micro-batch-sise 2 --hiden-size 4096 --tensor-model-parallel-size two "
        "--moe-layer-freq",
        c, m);
  });
  EXPECT_NE(message.find("4 problems"), std::string::npos) << message;
  EXPECT_NE(message.find("'--micro-batch-sise': not a Megatron-LM flag (did you mean '--micro-batch-size'?)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("'--hiden-size': not a Megatron-LM flag (did you mean '--hidden-size'?)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'tp': expected a whole number"), std::string::npos) << message;
  EXPECT_NE(message.find("'--moe-layer-freq': needs a value"), std::string::npos) << message;
}

TEST(MegatronArgs, FlagsThatDoNotShapeTheScheduleAreListedOnce) {
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  const MegatronArgsRead read = apply_megatron_args(
      "--lr 1e-4 --save /ckpt --micro-batch-size 2 --lr 2e-4 --recompute-modules core_attn --log-timers-to-tensorboard",
      c, m);
  EXPECT_EQ(read.not_modelled, (std::vector<std::string>{"--log-timers-to-tensorboard", "--lr", "--save"}));
  EXPECT_EQ(c.micro_batch_size, 2);
}

TEST(MegatronArgs, CudaGraphFlagsReplayTheLayersKernels) {
  const auto dispatch_of = [](const std::string& args) {
    FsdpConfig c;
    std::optional<ModelSpec> m = model_preset("llama3-8b");
    apply_megatron_args(args, c, m);
    return resolve_host_dispatch(c);
  };
  EXPECT_EQ(dispatch_of("--micro-batch-size 1"), HostDispatch::eager);  // Transformer Engine's modules, from Python
  EXPECT_EQ(dispatch_of("--enable-cuda-graph"), HostDispatch::cuda_graphs);
  EXPECT_EQ(dispatch_of("--external-cuda-graph"), HostDispatch::cuda_graphs);
  EXPECT_EQ(dispatch_of("--cuda-graph-impl transformer_engine"), HostDispatch::cuda_graphs);
  EXPECT_EQ(dispatch_of("--cuda-graph-impl none"), HostDispatch::eager);
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  try {
    apply_megatron_args("--cuda-graph-impl full", c, m);
    FAIL() << "an unknown implementation was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown CUDA graph implementation 'full'"), std::string::npos) << e.what();
  }
}

TEST(MegatronArgs, MoeLayerFreqAsAnIntegerOrAPythonListExpression) {
  // megatron/training/arguments.py moe_freq_type: N → layers whose index is a multiple of N; a list expression → one
  // 0 (dense) or 1 (MoE) per layer. DeepSeek-V3's "([0]*3+[1]*58)": layers 3-60 are MoE.
  const auto layers_of = [](const std::string& args) {
    FsdpConfig c;
    std::optional<ModelSpec> m = model_preset("deepseek-v3");
    apply_megatron_args(args, c, m);
    std::vector<int32_t> moe;
    for (int32_t l = 0; l < m->num_layers; ++l) {
      if (m->is_moe_layer(l)) moe.push_back(l);
    }
    return moe;
  };
  const std::vector<int32_t> deepseek = layers_of("--moe-layer-freq ([0]*3+[1]*58)");
  ASSERT_EQ(deepseek.size(), 58u);
  EXPECT_EQ(deepseek.front(), 3);
  EXPECT_EQ(deepseek.back(), 60);
  EXPECT_EQ(layers_of("--num-layers 4 --moe-layer-freq [1,0,1,0]"), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(layers_of("--num-layers 4 --moe-layer-freq 2*[0,1]"), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(layers_of("--num-layers 6 --moe-layer-freq 3"), (std::vector<int32_t>{0, 3}));
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("deepseek-v3");
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--moe-layer-freq [0]*3+[1]*57", c, m);
            }).find("the pattern has 60 entries but the model has 61 layers"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--moe-layer-freq [0]*100000000", c, m);
            }).find("cannot read the layer pattern"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--moe-layer-freq [0]*3+import", c, m);
            }).find("cannot read the layer pattern"),
            std::string::npos);
}

TEST(MegatronArgs, MlaIgnoresKvChannelsAndQkLayernormMeansTheLatentNorms) {
  // Megatron-LM accepts both with --multi-latent-attention: the heads are qk_head_dim + qk_pos_emb_head_dim wide.
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("deepseek-v3");
  const int64_t before = count_parameters(*m).total;
  apply_megatron_args(
      "--multi-latent-attention --kv-channels 128 --qk-layernorm --qk-head-dim 128 --qk-pos-emb-head-dim 64", c, m);
  EXPECT_EQ(m->head_dim, 192);
  EXPECT_FALSE(m->qk_norm);
  EXPECT_EQ(count_parameters(*m).total, before);
}

// ---- pipeline parallelism (megatron/training/arguments.py @ d98e8a64ddf3) -----------------------------------------

TEST(MegatronArgs, PipelineFlagsMapToTheKeys) {
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-70b");
  const MegatronArgsRead read = apply_megatron_args(
      "--pipeline-model-parallel-size 8 --num-virtual-stages-per-pipeline-rank 4 --decoder-first-pipeline-num-layers 3 "
      "--decoder-last-pipeline-num-layers 5 --account-for-loss-in-pipeline-split",
      c, m);
  EXPECT_EQ(c.pp, 8);
  EXPECT_EQ(c.virtual_pipeline_stages, 4);
  EXPECT_EQ(c.pipeline_schedule, PipelineSchedule::interleaved_1f1b);  // more than one chunk per rank
  EXPECT_EQ(c.first_stage_layers, 3);
  EXPECT_EQ(c.last_stage_layers, 5);
  EXPECT_FALSE(c.account_for_embedding_in_pipeline_split);
  EXPECT_TRUE(c.account_for_loss_in_pipeline_split);
  EXPECT_TRUE(read.not_modelled.empty());
  EXPECT_EQ(c.where("pp").file, "<megatron-args --pipeline-model-parallel-size pp=8>");
  // Only pp: Megatron-LM's non-interleaved 1F1B, an even split.
  FsdpConfig plain;
  apply_megatron_args("--pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split", plain, m);
  EXPECT_EQ(plain.pp, 4);
  EXPECT_EQ(plain.virtual_pipeline_stages, 1);
  EXPECT_EQ(plain.pipeline_schedule, PipelineSchedule::one_f_one_b);
  EXPECT_TRUE(plain.account_for_embedding_in_pipeline_split);
  // One virtual stage per rank is no interleaving (virtual_pipeline_model_parallel_size = None).
  FsdpConfig one;
  apply_megatron_args("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 1", one, m);
  EXPECT_EQ(one.virtual_pipeline_stages, 1);
  EXPECT_EQ(one.pipeline_schedule, PipelineSchedule::one_f_one_b);
  // --virtual-pipeline-model-parallel-size: Megatron-LM's flag of 2020-12 to 2021-02 (ModelParallelConfig's field).
  FsdpConfig legacy;
  apply_megatron_args(
      "--pipeline-model-parallel-size 8 --virtual-pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3 "
      "--account-for-loss-in-pipeline-split",
      legacy, m);
  EXPECT_EQ(legacy.pp, 8);
  EXPECT_EQ(legacy.virtual_pipeline_stages, 4);
  EXPECT_EQ(legacy.pipeline_schedule, PipelineSchedule::interleaved_1f1b);
  EXPECT_EQ(legacy.first_stage_layers, 3);
  EXPECT_TRUE(legacy.account_for_loss_in_pipeline_split);
  // Megatron-core's default micro-batch group (pp) is accepted as given.
  FsdpConfig group;
  apply_megatron_args(
      "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
      "--microbatch-group-size-per-virtual-pipeline-stage 4",
      group, m);
  EXPECT_EQ(group.virtual_pipeline_stages, 2);
}

TEST(MegatronArgs, LayersPerVirtualStageNeedTheLayerCount) {
  // validate_args: (num_layers [+1 embedding] [+1 loss]) / pp / N virtual stages per rank. Llama-3.1-405B's 126
  // layers with both accounted for: 128 / 8 = 16 per rank, in chunks of 8: 2 virtual stages.
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-405b");
  apply_megatron_args(
      "--pipeline-model-parallel-size 8 --num-layers-per-virtual-pipeline-stage 8 "
      "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split",
      c, m);
  EXPECT_EQ(c.virtual_pipeline_stages, 2);
  EXPECT_EQ(c.pipeline_schedule, PipelineSchedule::interleaved_1f1b);
  EXPECT_EQ(c.where("virtual_pipeline_stages").file,
            "<megatron-args --num-layers-per-virtual-pipeline-stage virtual_pipeline_stages=2>");
  // The layer count from the flags themselves: 80 / 4 = 20 per rank, chunks of 5: 4.
  FsdpConfig from_flags;
  std::optional<ModelSpec> none;
  apply_megatron_args(
      "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --vocab-size 128256 "
      "--num-layers-per-virtual-pipeline-stage 5 --pipeline-model-parallel-size 4",
      from_flags, none);
  EXPECT_EQ(from_flags.virtual_pipeline_stages, 4);
  // 20 layers per rank in chunks of 20: one, the plain 1F1B.
  FsdpConfig whole;
  std::optional<ModelSpec> llama70 = model_preset("llama3-70b");
  apply_megatron_args("--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 20", whole, llama70);
  EXPECT_EQ(whole.virtual_pipeline_stages, 1);
  EXPECT_EQ(whole.pipeline_schedule, PipelineSchedule::one_f_one_b);
}

TEST(MegatronArgs, PipelineLayoutSetsTheChunksPerRank) {
  // Megatron-Bridge's DeepSeek-V3 layout for PP 4 × VP 4 without MTP (recipes/deepseek/deepseek_v3.py @ 5776a6d9,
  // _get_deepseek_v3_pipeline_layout): the embedding and 4 layers, 14 chunks of 4, then 1 layer and the loss.
  std::optional<ModelSpec> m = model_preset("deepseek-v3");
  FsdpConfig c;
  apply_megatron_args("--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout 'Etttt|(tttt|)*14tL'", c, m);
  EXPECT_EQ(c.pipeline_layout, "Etttt|(tttt|)*14tL");
  EXPECT_EQ(c.overlap_p2p_comm, "auto");
  FsdpConfig blocking;
  apply_megatron_args(
      "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
      "--no-overlap-p2p-communication",
      blocking, m);
  EXPECT_EQ(blocking.overlap_p2p_comm, "false");
  (void)resolve_layout(*m, c, 4);
  EXPECT_EQ(c.virtual_pipeline_stages, 4);
  EXPECT_EQ(c.pipeline_schedule, PipelineSchedule::interleaved_1f1b);
}

TEST(MegatronArgs, PipelineErrors) {
  std::optional<ModelSpec> m = model_preset("llama3-70b");
  const auto error = [&](const std::string& args) {
    FsdpConfig c;
    return error_of([&] { apply_megatron_args(args, c, m); });
  };
  const std::string layout = error("--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout Et*3|t*3Lt");
  EXPECT_HAS(layout, "'pipeline_layout': the loss (L) must be the layout's last entry");
  EXPECT_HAS(error("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                   "--pipeline-model-parallel-layout Et*20|t*20|t*20|t*20L"),
             "--num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout both give the virtual");
  // Without a model fsdpsim cannot derive the virtual stages.
  FsdpConfig c;
  std::optional<ModelSpec> none;
  const std::string no_model = error_of([&] {
    apply_megatron_args("--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2", c, none);
  });
  EXPECT_HAS(no_model, "'--num-layers-per-virtual-pipeline-stage': the model's layer count is not known");
  EXPECT_HAS(no_model, "--num-virtual-stages-per-pipeline-rank");
  EXPECT_HAS(error("--pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 2"),
             "80 layers do not divide over pp=3 pipeline stages");
  EXPECT_HAS(error("--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 3"),
             "20 layers per pipeline rank do not divide into chunks of 3");
  EXPECT_HAS(error("--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 5 "
                   "--decoder-first-pipeline-num-layers 2"),
             "Megatron-LM takes --decoder-first/last-pipeline-num-layers only with "
             "--num-virtual-stages-per-pipeline-rank");
  EXPECT_HAS(error("--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 5 "
                   "--num-virtual-stages-per-pipeline-rank 4"),
             "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank both give the "
             "virtual pipeline stages");
  EXPECT_HAS(error("--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                   "--microbatch-group-size-per-virtual-pipeline-stage 2"),
             "'--microbatch-group-size-per-virtual-pipeline-stage': only Megatron-core's default group of pp=4 "
             "micro-batches per virtual stage is modelled");
  EXPECT_HAS(error("--decoder-first-pipeline-num-layers 0"),
             "'--decoder-first-pipeline-num-layers': a pipeline stage without decoder layers is not modelled");
  EXPECT_HAS(error("--pipeline-model-parallel-size 2000"), "'pp': value 2000 is out of range");
  EXPECT_HAS(error("--num-virtual-stages-per-pipeline-rank 100"),
             "'virtual_pipeline_stages': value 100 is out of range");
  EXPECT_HAS(error("--virtual-pipeline-model-parallel-size"),
             "'--virtual-pipeline-model-parallel-size': needs a value");
}

TEST(MegatronArgs, ShellVariablesOfTheLaunchScriptExpandAsTheShellWould) {
  // --tensor-model-parallel-size ${TP} as a script writes it: the environment's value, or ${NAME:-default}'s default;
  // an unset variable matters only where the flag is modelled.
  setenv("FSDPSIM_TEST_TP", "2", 1);
  unsetenv("FSDPSIM_TEST_UNSET");
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  apply_megatron_args(
      "--tensor-model-parallel-size ${FSDPSIM_TEST_TP} --micro-batch-size ${FSDPSIM_TEST_UNSET:-3} "
      "--save ${FSDPSIM_TEST_UNSET}/checkpoints",
      c, m);
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(c.micro_batch_size, 3);
  EXPECT_NE(error_of([&] { apply_megatron_args("--context-parallel-size ${FSDPSIM_TEST_UNSET}", c, m); })
                .find("'--context-parallel-size': its value ${FSDPSIM_TEST_UNSET} uses the unset shell variable "
                      "FSDPSIM_TEST_UNSET"),
            std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
