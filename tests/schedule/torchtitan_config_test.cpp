// torchtitan job TOMLs (--torchtitan-config): torchtitan's own shipped configs (tests/data/torchtitan/, see its
// README) read key by key into fsdpsim's model and configuration, each built and simulated, and the errors.
#include "frontends/torchtitan_config.h"

#include <gtest/gtest.h>

#include "builders/builder.h"
#include "common/yaml_reader.h"
#include "config/parallel_layout.h"
#include "schedule/validate.h"
#include "tests/support/error_of.h"
#include "tests/support/run_fsdpsim.h"

namespace fsdpsim {
namespace {

constexpr int32_t kGpusPerNode = 8;  // dgx-h100-ndr, the default topology

std::string fixture(const std::string& name) {
  return std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/torchtitan/" + name;
}

/// A loaded TOML: the model, the configuration and what its degrees say about the world.
struct Loaded {
  ModelSpec model;
  FsdpConfig config;
  TorchtitanWorld world;
};

Loaded load_fixture(const std::string& name) {
  FsdpConfig config;
  std::optional<ModelSpec> model;
  const TorchtitanWorld world = apply_torchtitan_config(fixture(name), config, model);
  return Loaded{.model = *model, .config = config, .world = world};
}

Loaded load_text(const std::string& text, std::optional<ModelSpec> model = std::nullopt) {
  FsdpConfig config;
  const TorchtitanWorld world = apply_torchtitan_toml(text, "job.toml", config, model);
  return Loaded{.model = *model, .config = config, .world = world};
}

// The error that loading `text` as job.toml throws.
std::string error_for(const std::string& text) {
  return error_of([&] { load_text(text); });
}

// What every torchtitan job is: FSDP2 over the data-parallel ranks with torchtitan's wrapping, bf16 compute
// weights over fp32 sharded parameters, gradients, reduce-scatter and Adam (MixedPrecisionPolicy defaults).
void expect_torchtitan_basics(const FsdpConfig& c) {
  EXPECT_EQ(c.implementation, Implementation::fsdp2);
  EXPECT_EQ(c.data_parallel_sharding_strategy, ShardingStrategy::optim_grads_params);
  EXPECT_EQ(c.fsdp2_wrap, Fsdp2Wrap::torchtitan);
  EXPECT_EQ(c.main_params_dtype, "fp32");
  EXPECT_EQ(c.main_grads_dtype, "fp32");
  EXPECT_EQ(c.grad_comm_dtype, "fp32");
  EXPECT_EQ(c.exp_avg_dtype, DType::fp32);
  EXPECT_EQ(c.exp_avg_sq_dtype, DType::fp32);
  EXPECT_EQ(c.num_distributed_optimizer_instances, 1);  // data_parallel_replicate_degree = 1
  EXPECT_TRUE(c.reshard_after_forward);
}

// Builds the job on `nodes` nodes and checks the schedule is valid (the simulation runs through the CLI below).
ParallelLayout build_and_validate(const Loaded& in, int32_t nodes) {
  FsdpConfig config = in.config;
  apply_override(config, "nodes=" + std::to_string(nodes));
  settle_torchtitan_world(in.world, config, kGpusPerNode);
  const ParallelLayout layout = resolve_layout(in.model, config, kGpusPerNode);
  const Schedule s = build_schedule(in.model, config, layout);
  EXPECT_TRUE(validate(s).empty()) << validate(s).front();
  return layout;
}

// ---- torchtitan's shipped TOMLs, key by key ------------------------------------------------------------------------

TEST(TorchtitanConfig, Llama3_8b) {
  const Loaded in = load_fixture("llama3_8b.toml");
  EXPECT_EQ(in.model.name, "llama3-8b");  // [model] name = "llama3", flavor = "8B"
  expect_torchtitan_basics(in.config);
  EXPECT_EQ(in.config.tp, 1);
  EXPECT_EQ(in.config.cp, 1);
  EXPECT_EQ(in.config.micro_batch_size, 1);   // local_batch_size = 1
  EXPECT_EQ(in.config.global_batch_size, 0);  // global_batch_size left at -1: local × dp
  EXPECT_EQ(in.config.seq_length, 8192);
  EXPECT_EQ(in.config.recompute_granularity, Recompute::selective_op);  // mode selective, option "op"
  EXPECT_FALSE(in.config.fused_elementwise);                            // [compile] enable=false
  EXPECT_EQ(in.config.loss_implementation, LossImpl::eager_fp32);
  // [quantize.linear.float8] is there but converters = ["float8"] is commented out: no FP8.
  EXPECT_FALSE(in.config.fp8_compute);
  EXPECT_EQ(in.config.param_dtype, DType::bf16);
  // data_parallel_shard_degree = -1: the world comes from the nodes, and must divide by 1 × 1 × 1.
  EXPECT_EQ(in.world.gpus, 0);
  EXPECT_EQ(in.world.fixed_degrees, 1);
  // Each key's origin is its line in the TOML (for the layout's errors).
  EXPECT_EQ(in.config.where("seq_length").line, 33);
  EXPECT_EQ(in.config.where("micro_batch_size").line, 32);
  EXPECT_EQ(in.config.where("tp").line, 41);
  EXPECT_EQ(in.config.where("recompute_granularity").line, 59);
  // 2 nodes: dp = 16 / (1·1) = 16, one micro-batch per step.
  const ParallelLayout l = build_and_validate(in, 2);
  EXPECT_EQ(l.dp, 16);
  EXPECT_EQ(l.micro_batches, 1);
}

TEST(TorchtitanConfig, Llama3_70b) {
  const Loaded in = load_fixture("llama3_70b.toml");
  EXPECT_EQ(in.model.name, "llama3-70b");
  expect_torchtitan_basics(in.config);
  EXPECT_EQ(in.config.tp, 8);  // tensor_parallel_degree = 8
  EXPECT_EQ(in.config.micro_batch_size, 8);
  EXPECT_EQ(in.config.seq_length, 8192);
  EXPECT_EQ(in.config.recompute_granularity, Recompute::full);  // mode = "full": every block
  EXPECT_EQ(in.config.recompute_method, RecomputeMethod::uniform);
  EXPECT_EQ(in.config.recompute_num_layers, 1);
  EXPECT_FALSE(in.config.fused_elementwise);
  EXPECT_FALSE(in.config.fp8_compute);
  EXPECT_EQ(in.world.fixed_degrees, 8);  // replicate 1 × tp 8 × cp 1
  // The TOML's "64 A100 GPUs": 8 nodes, dp = 64 / 8 = 8.
  const ParallelLayout l = build_and_validate(in, 8);
  EXPECT_EQ(l.dp, 8);
  EXPECT_EQ(l.tp, 8);
}

TEST(TorchtitanConfig, Llama3_405bWithFloat8AndCompile) {
  const Loaded in = load_fixture("llama3_405b.toml");
  EXPECT_EQ(in.model.name, "llama3-405b");
  EXPECT_EQ(in.config.tp, 8);
  EXPECT_EQ(in.config.micro_batch_size, 2);
  EXPECT_EQ(in.config.seq_length, 8192);
  EXPECT_EQ(in.config.recompute_granularity, Recompute::full);
  // [compile] enable = true, components = ["model", "loss"].
  EXPECT_TRUE(in.config.fused_elementwise);
  EXPECT_EQ(in.config.loss_implementation, LossImpl::compiled);
  // converters = ["float8"] with [quantize.linear.float8] enable_fsdp_float8_all_gather = true: FP8 GEMMs,
  // tensorwise scaling (no recipe_name), fp8 weights all-gathered.
  EXPECT_TRUE(in.config.fp8_compute);
  EXPECT_EQ(in.config.fp8_recipe, Fp8Recipe::tensorwise);
  EXPECT_EQ(in.config.param_dtype, DType::fp8);
  EXPECT_EQ(in.config.where("param_dtype").line, 62);
  build_and_validate(in, 64);
}

TEST(TorchtitanConfig, DeepSeekV3_671b) {
  const Loaded in = load_fixture("deepseek_v3_671b.toml");
  EXPECT_EQ(in.model.name, "deepseek-v3");
  expect_torchtitan_basics(in.config);  // fsdp_reshard_after_forward = "default"
  EXPECT_EQ(in.config.micro_batch_size, 4);
  EXPECT_EQ(in.config.seq_length, 4096);
  EXPECT_EQ(in.config.ep, 1);  // expert_parallel_degree = 1
  EXPECT_EQ(in.config.etp, 1);
  EXPECT_EQ(in.config.recompute_granularity, Recompute::selective_op);
  // components = ["loss"]: the loss is compiled, the model is not.
  EXPECT_FALSE(in.config.fused_elementwise);
  EXPECT_EQ(in.config.loss_implementation, LossImpl::compiled);
  EXPECT_FALSE(in.config.fp8_compute);  // converters commented out
  build_and_validate(in, 32);
}

// The same jobs through the program: each simulates (exit 0) with the configuration the TOML gives.
TEST(TorchtitanConfig, EachShippedTomlSimulates) {
  const std::vector<std::pair<std::string, int>> jobs{
      {"llama3_8b.toml", 2}, {"llama3_70b.toml", 8}, {"llama3_405b.toml", 64}, {"deepseek_v3_671b.toml", 32}};
  for (const auto& [name, nodes] : jobs) {
    const ProgramResult r = run_fsdpsim("simulate --torchtitan-config " + fixture(name) +
                                        " --set nodes=" + std::to_string(nodes) + " --no-advice");
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    EXPECT_NE(r.output.find("step time"), std::string::npos) << name << "\n" << r.output;
  }
}

TEST(TorchtitanConfig, PrintConfigShowsTheMappedKeys) {
  const ProgramResult r =
      run_fsdpsim("schedule --torchtitan-config " + fixture("llama3_70b.toml") + " --set nodes=8 --print-config");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"implementation: fsdp2", "tp: 8", "micro_batch_size: 8", "seq_length: 8192",
                           "recompute_granularity: full", "fused_elementwise: false", "nodes: 8"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
}

// ---- mappings, hand-derived ----------------------------------------------------------------------------------------

const char* kLlama8b = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n";

TEST(TorchtitanConfig, DefaultsAreTorchtitans) {
  // Nothing but the model: JobConfig's defaults, local_batch_size 8, seq_len 2048, selective AC every 2nd block
  // (floor(32 / 2) = 16 blocks, fsdpsim's `block` method), no compile.
  const Loaded in = load_text(kLlama8b);
  EXPECT_EQ(in.config.micro_batch_size, 8);
  EXPECT_EQ(in.config.seq_length, 2048);
  EXPECT_EQ(in.config.recompute_granularity, Recompute::full);
  EXPECT_EQ(in.config.recompute_method, RecomputeMethod::block);
  EXPECT_EQ(in.config.recompute_num_layers, 16);
  EXPECT_FALSE(in.config.fused_elementwise);
}

TEST(TorchtitanConfig, LayerSelectiveCheckpointing) {
  // Block k (1-based) is checkpointed when k % N == 0, all blocks when N is 0: floor(32 / N) of Llama-3-8B's 32.
  struct Case {
    std::string option;
    Recompute granularity;
    RecomputeMethod method;
    int32_t layers;
  };
  const std::vector<Case> cases{
      {"\"3\"", Recompute::full, RecomputeMethod::block, 10},    // floor(32 / 3) = 10
      {"4", Recompute::full, RecomputeMethod::block, 8},         // a bare integer: floor(32 / 4) = 8
      {"\"1\"", Recompute::full, RecomputeMethod::uniform, 1},   // every block: full recompute
      {"\"0\"", Recompute::full, RecomputeMethod::uniform, 1},   // 0: every block too
      {"\"40\"", Recompute::none, RecomputeMethod::uniform, 1},  // floor(32 / 40) = 0 blocks
  };
  for (const Case& c : cases) {
    const Loaded in = load_text(std::string(kLlama8b) +
                                "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = " + c.option);
    EXPECT_EQ(in.config.recompute_granularity, c.granularity) << c.option;
    EXPECT_EQ(in.config.recompute_method, c.method) << c.option;
    EXPECT_EQ(in.config.recompute_num_layers, c.layers) << c.option;
  }
  EXPECT_EQ(load_text(std::string(kLlama8b) + "[activation_checkpoint]\nmode = \"none\"").config.recompute_granularity,
            Recompute::none);
}

TEST(TorchtitanConfig, HsdpAndAFixedWorldSetTheNodes) {
  // replicate 2 × shard 8 × tp 1 × cp 1 = 16 GPUs = 2 nodes of 8; HSDP: 2 replicas, each sharding over 8.
  const Loaded in = load_text(std::string(kLlama8b) +
                              "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 8\n"
                              "[training]\nlocal_batch_size = 2\nglobal_batch_size = 128\n");
  EXPECT_EQ(in.world.gpus, 16);
  EXPECT_EQ(in.config.num_distributed_optimizer_instances, 2);
  EXPECT_EQ(in.config.outer_dp_sharding_strategy, OuterStrategy::no_shard);
  FsdpConfig config = in.config;
  settle_torchtitan_world(in.world, config, kGpusPerNode);
  EXPECT_EQ(config.nodes, 2);
  EXPECT_EQ(config.where("nodes").line, 6);  // data_parallel_shard_degree's line
  const ParallelLayout l = resolve_layout(in.model, config, kGpusPerNode);
  EXPECT_EQ(l.outer, 2);
  EXPECT_EQ(l.dense_shard, 8);  // dp·cp / outer = 16 / 2
  // Gradient accumulation: 128 / (2 × 16) = 4 micro-batches per step.
  EXPECT_EQ(l.micro_batches, 4);
}

TEST(TorchtitanConfig, ContextAndExpertParallelism) {
  // DeepSeek-V3 with EP 8 (ETP 1): both set; on a dense model EP has no effect in torchtitan, nor here.
  const std::string parallel = "[parallelism]\ncontext_parallel_degree = 2\nexpert_parallel_degree = 8\n";
  const Loaded moe = load_text("[model]\nname = \"deepseek_v3\"\nflavor = \"671B\"\n" + parallel);
  EXPECT_EQ(moe.config.cp, 2);
  EXPECT_EQ(moe.config.ep, 8);
  EXPECT_EQ(moe.config.etp, 1);
  const Loaded dense = load_text(std::string(kLlama8b) + parallel);
  EXPECT_EQ(dense.config.ep, 1);
  EXPECT_EQ(dense.world.fixed_degrees, 2);  // 1 × 1 × cp 2
}

TEST(TorchtitanConfig, ReshardAfterForward) {
  const Loaded never = load_text(std::string(kLlama8b) + "[parallelism]\nfsdp_reshard_after_forward = \"never\"\n");
  EXPECT_FALSE(never.config.reshard_after_forward);
  const Loaded always = load_text(std::string(kLlama8b) + "[parallelism]\nfsdp_reshard_after_forward = \"always\"\n");
  EXPECT_TRUE(always.config.reshard_after_forward);
}

TEST(TorchtitanConfig, OlderTorchtitanNames) {
  // torchtitan before 2025-06: training.batch_size, training.compile, converters = ["float8"] with [float8].
  const Loaded in = load_text(std::string(kLlama8b) +
                              "converters = [\"float8\"]\n[training]\nbatch_size = 3\ncompile = true\n"
                              "[float8]\nenable_fsdp_float8_all_gather = false\nrecipe_name = \"rowwise\"\n");
  EXPECT_EQ(in.config.micro_batch_size, 3);
  EXPECT_TRUE(in.config.fused_elementwise);
  EXPECT_EQ(in.config.loss_implementation, LossImpl::compiled);
  EXPECT_TRUE(in.config.fp8_compute);
  EXPECT_EQ(in.config.fp8_recipe, Fp8Recipe::rowwise);
  EXPECT_EQ(in.config.fp8_library, Fp8Library::torchao);  // torchao's float8 linears cast the operands
  EXPECT_EQ(in.config.param_dtype, DType::bf16);          // bf16 all-gather
  // No recipe_name: torchao's default, tensorwise.
  const Loaded plain = load_text(std::string(kLlama8b) + "converters = [\"float8\"]\n");
  EXPECT_EQ(plain.config.fp8_recipe, Fp8Recipe::tensorwise);
  EXPECT_EQ(plain.config.fp8_library, Fp8Library::torchao);
  EXPECT_FALSE(plain.config.fp8_output_layer);  // no filter_fqns: torchtitan's own filter on "output"
  // filter_fqns decides whether the output layer is converted.
  const std::string table = "converters = [\"quantize.linear.float8\"]\n[quantize.linear.float8]\n";
  EXPECT_FALSE(load_text(std::string(kLlama8b) + table + "filter_fqns = [\"output\"]\n").config.fp8_output_layer);
  EXPECT_TRUE(load_text(std::string(kLlama8b) + table + "filter_fqns = [\"attention.wk\"]\n").config.fp8_output_layer);
}

TEST(TorchtitanConfig, MxAndBf16Training) {
  const Loaded mx = load_text(std::string(kLlama8b) + "converters = [\"quantize.linear.mx\"]\n");
  EXPECT_TRUE(mx.config.fp8_compute);
  EXPECT_EQ(mx.config.fp8_recipe, Fp8Recipe::mxfp8);
  EXPECT_EQ(mx.config.fp8_library, Fp8Library::torchao);
  // training.dtype = "bfloat16": parameters, gradients and optimizer state all bf16, no fp32 copy.
  const Loaded bf16 = load_text(std::string(kLlama8b) + "[training]\ndtype = \"bfloat16\"\n");
  EXPECT_EQ(bf16.config.main_params_dtype, "auto");
  EXPECT_EQ(bf16.config.main_grads_dtype, "bf16");
  EXPECT_EQ(bf16.config.grad_comm_dtype, "bf16");
  EXPECT_EQ(bf16.config.exp_avg_dtype, DType::bf16);
}

TEST(TorchtitanConfig, AModelGivenBeforeIsKept) {
  // --model mixtral-8x7b with a TOML whose flavor fsdpsim has no preset for: the given model stays.
  const Loaded in = load_text("[model]\nname = \"qwen3\"\nflavor = \"32B\"\n", model_preset("mixtral-8x7b"));
  EXPECT_EQ(in.model.name, "mixtral-8x7b");
}

TEST(TorchtitanConfig, PassiveTablesAreAccepted) {
  // A custom table is accepted when a custom config module declares it (torchtitan's extension mechanism).
  EXPECT_NO_THROW(load_text(std::string(kLlama8b) +
                            "[optimizer]\nlr = 1e-4\nwhatever = 1\n[job]\ncustom_config_module = \"my.cfg\"\n"
                            "[my_extension]\nx = 1\n"));
}

// ---- pipeline parallelism ------------------------------------------------------------------------------------------

TEST(TorchtitanConfig, Llama3_405bPipelineInterleaved) {
  // torchtitan's benchmark Table 5 (see the TOML's header): FSDP 8 × TP 8 × PP 8 = 512 GPUs, Interleaved1F1B with
  // pipeline_parallel_layers_per_stage = 8: ceil((126 + 1 + 1) / 8) = 16 virtual stages, 2 per rank, each of
  // 128 / 16 = 8 "layers", the first giving one to the embedding and the last one to the output
  // (_generate_llm_fqn_per_model_part): Megatron-core's account_for_embedding/loss split.
  const Loaded in = load_fixture("llama3_405b_pp8_interleaved.toml");
  EXPECT_EQ(in.model.num_layers, 126);
  EXPECT_EQ(in.config.pp, 8);
  EXPECT_EQ(in.config.tp, 8);
  EXPECT_EQ(in.config.virtual_pipeline_stages, 2);
  EXPECT_EQ(in.config.pipeline_schedule, PipelineSchedule::interleaved_1f1b);
  EXPECT_TRUE(in.config.account_for_embedding_in_pipeline_split);
  EXPECT_TRUE(in.config.account_for_loss_in_pipeline_split);
  EXPECT_EQ(in.config.first_stage_layers, 0);
  EXPECT_EQ(in.config.last_stage_layers, 0);
  // pipeline_parallel_microbatch_size left at 1: the local batch of 32 is 32 pipeline micro-batches; the global batch
  // as given (256 = 32 × dp 8, no accumulation).
  EXPECT_EQ(in.config.micro_batch_size, 1);
  EXPECT_EQ(in.config.global_batch_size, 256);
  // With PP, torchtitan's "default" resharding keeps the gathered blocks (reshard_after_forward = not pp_enabled),
  // and torch.distributed.pipelining reduces gradients only in the last micro-batch's backward.
  EXPECT_FALSE(in.config.reshard_after_forward);
  EXPECT_EQ(in.config.gradient_sync, GradSync::last_micro_batch);
  EXPECT_EQ(in.world.fixed_degrees, 64);  // replicate 1 × tp 8 × cp 1 × pp 8
  EXPECT_EQ(in.world.gpus, 512);
  EXPECT_HAS(in.world.degrees, "× pipeline_parallel_degree 8 = 512 GPUs");
  EXPECT_EQ(in.config.where("pp").line, 58);
  EXPECT_EQ(in.config.where("pipeline_schedule").line, 59);
  EXPECT_EQ(in.config.where("virtual_pipeline_stages").line, 60);
  FsdpConfig config = in.config;
  settle_torchtitan_world(in.world, config, kGpusPerNode);
  EXPECT_EQ(config.nodes, 64);
  EXPECT_EQ(config.global_batch_size, 256);
}

const char* kPp2 = "[parallelism]\npipeline_parallel_degree = 2\n";

TEST(TorchtitanConfig, PipelineDefaults) {
  // Llama-3-8B, pp 2 and nothing else: 1F1B (Parallelism.pipeline_parallel_schedule), one stage per rank of
  // (32 + 1 + 1) / 2 = 17, i.e. 16 decoder layers on each: the accounted-for split.
  const Loaded in = load_text(std::string(kLlama8b) + kPp2);
  EXPECT_EQ(in.config.pp, 2);
  EXPECT_EQ(in.config.virtual_pipeline_stages, 1);
  EXPECT_EQ(in.config.pipeline_schedule, PipelineSchedule::one_f_one_b);
  EXPECT_TRUE(in.config.account_for_embedding_in_pipeline_split);
  EXPECT_TRUE(in.config.account_for_loss_in_pipeline_split);
  // local_batch_size 8 (the default) in micro-batches of 1; global -1: local × dp once the nodes fix dp:
  // 2 nodes = 16 GPUs / pp 2 = dp 8 → 64 sequences, 8 pipeline micro-batches per step.
  EXPECT_EQ(in.config.micro_batch_size, 1);
  FsdpConfig config = in.config;
  apply_override(config, "nodes=2");
  settle_torchtitan_world(in.world, config, kGpusPerNode);
  EXPECT_EQ(config.global_batch_size, 64);
  EXPECT_EQ(config.where("global_batch_size").line, 4);  // the shard degree (left at -1): its [parallelism] table
  // A fixed shard degree fixes the global batch at once: 4 × pp 2 = 8 GPUs, dp 4, 4 × local 4 = 16.
  const Loaded fixed = load_text(std::string(kLlama8b) + kPp2 +
                                 "data_parallel_shard_degree = 4\npipeline_parallel_microbatch_size = 2\n"
                                 "[training]\nlocal_batch_size = 4\n");
  EXPECT_EQ(fixed.config.micro_batch_size, 2);
  EXPECT_EQ(fixed.config.global_batch_size, 16);
  EXPECT_EQ(fixed.world.gpus, 8);
  // Interleaved1F1B without layers_per_stage: 2 stages per rank; with the embedding and output weighing nothing,
  // 32 / 4 = 8 layers each.
  const Loaded interleaved = load_text(std::string(kLlama8b) + kPp2 +
                                       "pipeline_parallel_schedule = \"interleaved1f1b\"\n"
                                       "pipeline_parallel_first_stage_less_layers = 0\n"
                                       "pipeline_parallel_last_stage_less_layers = 0\n");
  EXPECT_EQ(interleaved.config.virtual_pipeline_stages, 2);  // the name matched case-insensitively, as torch does
  EXPECT_EQ(interleaved.config.pipeline_schedule, PipelineSchedule::interleaved_1f1b);
  EXPECT_FALSE(interleaved.config.account_for_embedding_in_pipeline_split);
  EXPECT_FALSE(interleaved.config.account_for_loss_in_pipeline_split);
  // GPipe.
  EXPECT_EQ(
      load_text(std::string(kLlama8b) + kPp2 + "pipeline_parallel_schedule = \"GPipe\"\n").config.pipeline_schedule,
      PipelineSchedule::gpipe);
  // The V-shaped schedules: two stages per rank, 32 layers over 4 stages.
  for (const auto& [name, schedule] : {std::pair<std::string, PipelineSchedule>{"ZBVZeroBubble", PipelineSchedule::zbv},
                                       {"dualpipev", PipelineSchedule::dualpipev}}) {
    const Loaded v = load_text(std::string(kLlama8b) + kPp2 + "pipeline_parallel_schedule = \"" + name +
                               "\"\npipeline_parallel_first_stage_less_layers = 0\n"
                               "pipeline_parallel_last_stage_less_layers = 0\n");
    EXPECT_EQ(v.config.pipeline_schedule, schedule) << name;
    EXPECT_EQ(v.config.virtual_pipeline_stages, 2) << name;
    EXPECT_EQ(v.config.gradient_sync, GradSync::last_micro_batch) << name;
  }
  // Without PP the pipeline keys do nothing (DeepSeek-V3's TOML names Interleaved1F1B with degree 1).
  const Loaded no_pp =
      load_text(std::string(kLlama8b) + "[parallelism]\npipeline_parallel_schedule = \"ZBVZeroBubble\"\n");
  EXPECT_EQ(no_pp.config.pp, 1);
  EXPECT_EQ(no_pp.config.micro_batch_size, 8);
  EXPECT_EQ(no_pp.config.gradient_sync, GradSync::every_micro_batch);
  EXPECT_TRUE(no_pp.config.reshard_after_forward);
}

TEST(TorchtitanConfig, PipelineSplits) {
  // first/last_stage_less_layers = 2: (32 + 2 + 2) / 4 = 9 per stage, [7, 9, 9, 7]: the first and last stage's own
  // counts (Megatron's --decoder-first/last-pipeline-num-layers), the middle even.
  const Loaded weighted =
      load_text(std::string(kLlama8b) +
                "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_first_stage_less_layers = 2\n"
                "pipeline_parallel_last_stage_less_layers = 2\n");
  EXPECT_EQ(weighted.config.first_stage_layers, 7);
  EXPECT_EQ(weighted.config.last_stage_layers, 7);
  EXPECT_FALSE(weighted.config.account_for_embedding_in_pipeline_split);
  EXPECT_EQ(weighted.config.where("first_stage_layers").line, 6);
  // Llama-3-70B on pp 8 with 1F1B: 82 = 8 × 10 + 2, torchtitan gives the first two stages one more:
  // [10, 11, 10, 10, 10, 10, 10, 9], which Megatron-core's rule (only the first and last rank differ) cannot give.
  const std::string uneven =
      error_for("[model]\nname = \"llama3\"\nflavor = \"70B\"\n[parallelism]\npipeline_parallel_degree = 8\n");
  EXPECT_HAS(uneven,
             "job.toml:5:28: 'parallelism.pipeline_parallel_degree': torchtitan splits the layers over 8 "
             "stages as [10, 11, 10, 10, 10, 10, 10, 9]");
  // Interleaved1F1B with layers_per_stage 3: ceil(34 / 3) = 12 stages of 34 / 12 = 2 r 10; the message offers a
  // layers_per_stage that divides 34 over a multiple of pp 2: 34 / (2 × 17) = 1.
  const std::string suggestion = error_for(std::string(kLlama8b) + kPp2 +
                                           "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                                           "pipeline_parallel_layers_per_stage = 3\n");
  EXPECT_HAS(suggestion,
             "'parallelism.pipeline_parallel_layers_per_stage': torchtitan splits the layers over 12 "
             "stages as [2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 1]");
  EXPECT_HAS(suggestion, "e.g. pipeline_parallel_layers_per_stage = 1 (17 stages per rank)");
}

TEST(TorchtitanConfig, PipelineErrors) {
  const std::string pp2 = std::string(kLlama8b) + kPp2;
  // ceil(34 / 8) = 5 stages over pp 2.
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_layers_per_stage = 8\n"),
             "job.toml:6:38: 'parallelism.pipeline_parallel_layers_per_stage': (32 layers + 1 + 1 for the embedding "
             "and the output) / 8 = 5 virtual stages do not divide over pipeline_parallel_degree 2");
  // ceil(34 / 6) = 6 = 3 per rank, but 1F1B runs one.
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_layers_per_stage = 6\n"),
             "but 1F1B runs one stage per rank (2 stages) (set pipeline_parallel_layers_per_stage = 17, or use "
             "Interleaved1F1B)");
  // ceil(34 / 17) = 2 = 1 per rank, but Interleaved1F1B needs two.
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                             "pipeline_parallel_layers_per_stage = 17\n"),
             "but Interleaved1F1B needs at least two stages per rank");
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_schedule = \"LoopedBFS\"\n"),
             "'parallelism.pipeline_parallel_schedule': the LoopedBFS pipeline schedule is not modelled");
  // ceil(34 / 6) = 6 = 3 stages per rank, but the V-shaped schedules run exactly two: 34 / 4 → 9 per stage.
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_schedule = \"ZBVZeroBubble\"\n"
                             "pipeline_parallel_layers_per_stage = 6\n"),
             "but ZBVZeroBubble runs exactly two stages per rank (set pipeline_parallel_layers_per_stage = 9)");
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_schedule = \"1F1F\"\n"),
             "unknown pipeline schedule '1F1F' (did you mean '1F1B'?)");
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_schedule_csv = \"sched.csv\"\n"),
             "'parallelism.pipeline_parallel_schedule_csv': a pipeline schedule read from a CSV file is not modelled");
  EXPECT_HAS(error_for(pp2 + "module_fqns_per_model_part = [[\"tok_embeddings\"], [\"norm\"]]\n"),
             "'parallelism.module_fqns_per_model_part': an explicit split into model parts is not modelled");
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_split_points = [\"layers.16\"]\n"),
             "'parallelism.pipeline_parallel_split_points': explicit pipeline split points are not modelled");
  EXPECT_HAS(error_for(pp2 + "pipeline_parallel_microbatch_size = 3\n"),
             "'parallelism.pipeline_parallel_microbatch_size': training.local_batch_size = 8 is not divisible by "
             "pipeline_parallel_microbatch_size 3");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[parallelism]\npipeline_parallel_degree = 2000\n"),
             "job.toml:5:28: 'parallelism.pipeline_parallel_degree': value 2000 is out of range");
}

TEST(TorchtitanConfig, OlderPipelineKeys) {
  // torchtitan before 2025-03 ([experimental] pipeline keys, pipeline_parallel_microbatches): 8 sequences in
  // 4 micro-batches of 2.
  const Loaded in = load_text(std::string(kLlama8b) +
                              "[training]\nbatch_size = 8\n[experimental]\npipeline_parallel_degree = 2\n"
                              "pipeline_parallel_schedule = \"gpipe\"\npipeline_parallel_microbatches = 4\n");
  EXPECT_EQ(in.config.pp, 2);
  EXPECT_EQ(in.config.pipeline_schedule, PipelineSchedule::gpipe);
  EXPECT_EQ(in.config.micro_batch_size, 2);
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[experimental]\npipeline_parallel_degree = 2\n"
                                               "pipeline_parallel_microbatches = 3\n"),
             "training.local_batch_size = 8 does not split into 3 pipeline micro-batches");
}

// ---- the world against the nodes -----------------------------------------------------------------------------------

TEST(TorchtitanConfig, WorldErrors) {
  const std::string toml = std::string(kLlama8b) +
                           "[parallelism]\ndata_parallel_shard_degree = 4\n"
                           "tensor_parallel_degree = 8\n";
  const Loaded in = load_text(toml);
  EXPECT_EQ(in.world.gpus, 32);  // 1 × 4 × 8 × 1
  FsdpConfig two_nodes = in.config;
  apply_override(two_nodes, "nodes=2");
  const std::string mismatch = error_of([&] { settle_torchtitan_world(in.world, two_nodes, kGpusPerNode); });
  EXPECT_HAS(mismatch, "job.toml:5:30: 'parallelism.data_parallel_shard_degree':");
  EXPECT_HAS(mismatch, "= 32 GPUs but nodes=2 (<--set nodes=2>) gives 16 GPUs");
  EXPECT_HAS(mismatch, "set it to 4");
  FsdpConfig four_nodes = in.config;
  apply_override(four_nodes, "nodes=4");
  EXPECT_NO_THROW(settle_torchtitan_world(in.world, four_nodes, kGpusPerNode));

  // Fewer GPUs than a node: part of one node (gpus=3); more, but not whole nodes: a partial last node (gpus=12 on two
  // nodes).
  const Loaded three = load_text(std::string(kLlama8b) + "[parallelism]\ndata_parallel_shard_degree = 3\n");
  FsdpConfig c3 = three.config;
  settle_torchtitan_world(three.world, c3, kGpusPerNode);
  EXPECT_EQ(c3.gpus, 3);
  EXPECT_EQ(c3.nodes, 1);
  const Loaded twelve = load_text(std::string(kLlama8b) + "[parallelism]\ndata_parallel_shard_degree = 12\n");
  FsdpConfig c12 = twelve.config;
  settle_torchtitan_world(twelve.world, c12, kGpusPerNode);
  EXPECT_EQ(c12.gpus, 12);
  EXPECT_EQ(c12.nodes, 2);

  const Loaded fill = load_text(std::string(kLlama8b) + "[parallelism]\ntensor_parallel_degree = 3\n");
  FsdpConfig cf = fill.config;
  EXPECT_HAS(error_of([&] { settle_torchtitan_world(fill.world, cf, kGpusPerNode); }),
             "nodes=1 × 8 GPUs = 8 GPUs is not a multiple of data_parallel_replicate_degree 1 × "
             "data_parallel_shard_degree -1 × tensor_parallel_degree 3 × context_parallel_degree 1");
}

// ---- errors: file:line, the key, what is valid ---------------------------------------------------------------------

// [optimizer] implementation: torchtitan's default "fused"; "foreach" and "for-loop" are torch.optim's list kernels.
TEST(TorchtitanConfig, OptimizerImplementation) {
  EXPECT_EQ(load_text(kLlama8b).config.optimizer_implementation, OptimizerImpl::fused);
  EXPECT_EQ(
      load_text(std::string(kLlama8b) + "[optimizer]\nimplementation = \"foreach\"\n").config.optimizer_implementation,
      OptimizerImpl::foreach);
  EXPECT_EQ(
      load_text(std::string(kLlama8b) + "[optimizer]\nimplementation = \"for-loop\"\n").config.optimizer_implementation,
      OptimizerImpl::foreach);
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[optimizer]\nimplementation = \"apex\"\n"),
             "'optimizer.implementation': unknown implementation 'apex' (use \"fused\", \"foreach\" or \"for-loop\")");
}

// [parallelism] enable_async_tensor_parallel: torch.compile's micro-pipelined TP, so only with the model compiled and
// only where there is TP.
TEST(TorchtitanConfig, AsyncTensorParallel) {
  const std::string tp8 = std::string(kLlama8b) + "[parallelism]\ntensor_parallel_degree = 8\n";
  EXPECT_FALSE(load_text(tp8 + "[compile]\nenable = true\n").config.async_tp);
  EXPECT_TRUE(load_text(tp8 + "enable_async_tensor_parallel = true\n[compile]\nenable = true\n").config.async_tp);
  EXPECT_FALSE(load_text(std::string(kLlama8b) +
                         "[parallelism]\nenable_async_tensor_parallel = true\n[compile]\nenable = true\n")
                   .config.async_tp);  // TP 1: nothing to overlap
  EXPECT_HAS(error_for(tp8 + "enable_async_tensor_parallel = true\n"),
             "'parallelism.enable_async_tensor_parallel': async tensor parallelism is an inductor pass and needs the "
             "model compiled (set compile.enable = true");
}

TEST(TorchtitanConfig, Errors) {
  EXPECT_HAS(
      error_for(std::string(kLlama8b) + "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = "
                                        "\"InterleavedZeroBubble\"\n"),
      "job.toml:6:30: 'parallelism.pipeline_parallel_schedule': the InterleavedZeroBubble pipeline schedule "
      "is not modelled (use one fsdpsim models: 1F1B, GPipe, Interleaved1F1B, ZBVZeroBubble or DualPipeV)");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[parallelism]\ntensor_paralel_degree = 2\n"),
             "job.toml:5:25: 'parallelism.tensor_paralel_degree': unknown key in [parallelism] (did you mean "
             "'tensor_parallel_degree'?)");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[trainng]\nseq_len = 2\n"),
             "'trainng': unknown torchtitan table (did you mean 'training'?)");
  EXPECT_HAS(error_for("[model]\nname = \"qwen3\"\nflavor = \"32B\"\n"),
             "job.toml:3:10: 'model.flavor': no fsdpsim preset for torchtitan model 'qwen3' flavor '32B' (known: "
             "llama3 8B -> llama3-8b;");
  EXPECT_HAS(error_for("[model]\nname = \"llama3\"\n"), "flavor 'debugmodel'");  // Model.flavor's default
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[parallelism]\ntensor_parallel_degree = \"8\"\n"),
             "job.toml:5:26: 'parallelism.tensor_parallel_degree': expected a whole number, got a string");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[parallelism]\ndata_parallel_shard_degree = 0\n"),
             "use -1 (the GPUs left over) or a degree ≥ 1");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[parallelism]\ndata_parallel_shard_degree = -2\n"),
             "value -2 is out of range");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[activation_checkpoint]\nmode = \"memory_budget\"\n"),
             "'activation_checkpoint.mode': the compiler's memory-budget partitioning is not modelled");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[activation_checkpoint]\nmode = \"ful\"\n"),
             "unknown value 'ful' (did you mean 'full'?)");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[activation_checkpoint]\nselective_ac_option = \"layer\"\n"),
             "unknown selective AC option 'layer'");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "converters = [\"fp8\"]\n"),
             "'model.converters': unknown model converter 'fp8'");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[training]\nmixed_precision_param = \"float32\"\n"),
             "fp32 compute weights are not modelled");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[parallelism]\nexpert_parallel_degree = 8\n"
                                               "expert_tensor_parallel_degree = 2\ntensor_parallel_degree = 4\n"),
             "(torchtitan supports ETP = TP or ETP = 1)");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[compile]\nenable = true\ncomponents = [\"model\", \"optimizer\"]\n"),
             "unknown component 'optimizer'");
  EXPECT_HAS(error_for("[model\nname = 1\n"), "job.toml:1:7: malformed TOML:");
  EXPECT_HAS(error_for("parallelism = 3\n"), "'parallelism': expected a table [parallelism], got a whole number");
  EXPECT_HAS(error_for(std::string(kLlama8b) + "[training]\nseq_len = 100000000000\n"),
             "'training.seq_len': value 100000000000 is out of range");
}

TEST(TorchtitanConfig, LayoutErrorsPointAtTheToml) {
  // tp 3 does not divide Llama-3-8B's 32 heads: resolve_layout blames 'tp' at tensor_parallel_degree's line.
  Loaded in = load_text(std::string(kLlama8b) +
                        "[parallelism]\ndata_parallel_shard_degree = 8\n"
                        "tensor_parallel_degree = 3\n");
  FsdpConfig config = in.config;
  config.nodes = 3;  // 24 GPUs = 8 × 3
  EXPECT_HAS(error_of([&] { (void)resolve_layout(in.model, config, kGpusPerNode); }), "job.toml:6:26: 'tp':");
}

TEST(TorchtitanConfig, AMissingFileIsAConfigError) {
  FsdpConfig config;
  std::optional<ModelSpec> model;
  EXPECT_HAS(error_of([&] { apply_torchtitan_config("/nonexistent/job.toml", config, model); }),
             "/nonexistent/job.toml: cannot open file");
}

}  // namespace
}  // namespace fsdpsim
