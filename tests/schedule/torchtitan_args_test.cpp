// torchtitan command lines (--torchtitan-args): the config-registry functions of torchtitan b5bcd76c and its frozen
// --section.option flags, read into the model and the configuration. Each registry function's settings are quoted in
// the comments from torchtitan/models/<module>/config_registry.py at that commit.
#include "frontends/torchtitan_args.h"

#include <gtest/gtest.h>

#include "config/parallel_layout.h"
#include "tests/support/error_of.h"
#include "tests/support/run_fsdpsim.h"

namespace fsdpsim {
namespace {

struct Read {
  ModelSpec model;
  FsdpConfig config;
  TorchtitanWorld world;
};

Read read(const std::string& args) {
  FsdpConfig config;
  std::optional<ModelSpec> model;
  const TorchtitanWorld world = apply_torchtitan_args(args, config, model);
  return Read{.model = *model, .config = config, .world = world};
}

std::string error_for(const std::string& args) {
  return error_of([&] { read(args); });
}

TEST(TorchtitanArgs, Llama3_70bIsItsRegistryFunction) {
  // llama3_70b(): TP 8, num_tokens_per_microbatch_per_dp_rank=8 * 8192, max_context_length=8192, FullAC,
  // ChunkedLossWrapper around CrossEntropyLoss, no compile.
  const Read r = read("--module llama3 --config llama3_70b");
  EXPECT_EQ(r.model.name, "llama3-70b");
  EXPECT_EQ(r.config.implementation, Implementation::fsdp2);
  EXPECT_EQ(r.config.tp, 8);
  EXPECT_EQ(r.config.micro_batch_size, 8);  // 65,536 tokens / 8,192
  EXPECT_EQ(r.config.seq_length, 8192);
  EXPECT_EQ(r.config.recompute_granularity, Recompute::full);
  EXPECT_TRUE(r.config.loss_chunked_backward);
  EXPECT_EQ(r.config.loss_chunks, 8);
  EXPECT_EQ(r.config.loss_implementation, LossImpl::eager_fp32);  // compile is off
  EXPECT_FALSE(r.config.fused_elementwise);
  EXPECT_EQ(r.world.gpus, 0);  // data_parallel_shard_degree -1: the launcher's world decides
  EXPECT_EQ(r.world.fixed_degrees, 8);
  EXPECT_EQ(r.config.where("tp").file,
            "torchtitan config llama3_70b (torchtitan/models/llama3/config_registry.py @ b5bcd76c)");
}

TEST(TorchtitanArgs, FlagsOverrideTheFunction) {
  const Read r = read(
      "--module=llama3 --config=llama3_70b --parallelism.tensor_parallel_degree 4 "
      "--training.num_tokens_per_microbatch_per_dp_rank=16384 --loss.num_chunks 16 --compile.enable");
  EXPECT_EQ(r.config.tp, 4);
  EXPECT_EQ(r.config.micro_batch_size, 2);
  EXPECT_EQ(r.config.loss_chunks, 16);
  // compile.components defaults to model and loss: both compiled.
  EXPECT_TRUE(r.config.fused_elementwise);
  EXPECT_EQ(r.config.loss_implementation, LossImpl::compiled);
  EXPECT_EQ(r.config.where("tp").file, "--parallelism.tensor_parallel_degree (torchtitan command line)");
  const Read off = read("--module llama3 --config llama3_8b_mxfp8 --compile.no_enable");
  EXPECT_FALSE(off.config.fused_elementwise);
}

TEST(TorchtitanArgs, VariantsStartFromTheirBase) {
  // llama3_8b_mxfp8(): config = llama3_8b(); compile the model; MXFP8LinearConverter.
  const Read mx = read("--module llama3 --config llama3_8b_mxfp8");
  EXPECT_EQ(mx.model.name, "llama3-8b");
  EXPECT_EQ(mx.config.micro_batch_size, 1);  // llama3_8b's 1 * 8192 tokens
  EXPECT_EQ(mx.config.fp8_recipe, Fp8Recipe::mxfp8);
  EXPECT_TRUE(mx.config.fused_elementwise);
  EXPECT_EQ(mx.config.loss_implementation, LossImpl::eager_fp32);  // components=["model"]: the loss stays eager
  // deepseek_v3_671b_float8(): config = deepseek_v3_671b(); Float8LinearConverter(filter_fqns=["lm_head",
  // "router.gate"]) and Float8GroupedExpertsConverter.
  const Read f8 = read("--module torchtitan.models.deepseek_v3 --config deepseek_v3_671b_float8");
  EXPECT_TRUE(f8.config.fp8_compute);
  EXPECT_FALSE(f8.config.fp8_output_layer);
  EXPECT_EQ(f8.config.ep, 2);
  EXPECT_EQ(f8.config.seq_length, 4096);
}

TEST(TorchtitanArgs, RunTrainShGivesTheGpusAndTheModule) {
  // run_train.sh: NGPU=${NGPU:-"8"}, MODULE=${MODULE:-"llama3"}; llama3_8b(): 1 * 8192 tokens, SelectiveAC.
  const Read r = read("CONFIG=llama3_8b LOG_RANK=0 ./run_train.sh --training.steps 100");
  EXPECT_EQ(r.model.name, "llama3-8b");
  EXPECT_EQ(r.world.launcher_gpus, 8);
  EXPECT_EQ(r.config.micro_batch_size, 1);
  EXPECT_EQ(r.config.recompute_granularity, Recompute::selective_op);  // per-op SAC
  Read four = read("NGPU=4 CONFIG=llama3_8b ./run_train.sh");
  settle_torchtitan_world(four.world, four.config, 8);
  EXPECT_EQ(four.config.gpus, 4);
  EXPECT_EQ(four.config.where("gpus").file, "NGPU=4 (torchtitan command line)");
  // A node count given with --set plans another size: the launcher's GPUs give way.
  Read planned = read("NGPU=4 CONFIG=llama3_8b ./run_train.sh");
  apply_override(planned.config, "nodes=8");
  settle_torchtitan_world(planned.world, planned.config, 8);
  EXPECT_EQ(planned.config.gpus, 0);
  EXPECT_EQ(planned.config.nodes, 8);
}

TEST(TorchtitanArgs, TorchrunGivesTheWorldAndTheFloat8Recipe) {
  // multinode_trainer.slurm's launcher; llama3_405b(): Float8LinearConverter(filter_fqns=["lm_head"]) at its
  // default recipe rowwise, compile with async TP, TP 8, 2 * 8192 tokens, FullAC.
  const Read r = read(
      "srun torchrun --nnodes 4 --nproc_per_node 8 --rdzv_id 101 --rdzv_backend c10d -m torchtitan.train "
      "--module llama3 --config llama3_405b");
  EXPECT_EQ(r.model.name, "llama3-405b");
  EXPECT_EQ(r.world.launcher_gpus, 32);
  EXPECT_TRUE(r.config.fp8_compute);
  EXPECT_EQ(r.config.fp8_recipe, Fp8Recipe::rowwise);
  EXPECT_FALSE(r.config.fp8_output_layer);       // lm_head is filtered out
  EXPECT_EQ(r.config.param_dtype, DType::bf16);  // FSDP float8 all-gather is tensorwise-only
  EXPECT_TRUE(r.config.async_tp);
  EXPECT_EQ(r.config.loss_implementation, LossImpl::compiled);
  EXPECT_EQ(r.config.micro_batch_size, 2);
}

TEST(TorchtitanArgs, DeepSeekV3CompilesOnlyTheLoss) {
  // deepseek_v3_671b(): CompileConfig(enable=True, components=["loss"]), EP 2, 4 * 4096 tokens.
  const Read r = read("--module deepseek_v3 --config deepseek_v3_671b");
  EXPECT_EQ(r.model.name, "deepseek-v3");
  EXPECT_FALSE(r.config.fused_elementwise);
  EXPECT_EQ(r.config.loss_implementation, LossImpl::compiled);
  EXPECT_EQ(r.config.ep, 2);
  EXPECT_EQ(r.config.micro_batch_size, 4);
  EXPECT_EQ(r.config.seq_length, 4096);
}

TEST(TorchtitanArgs, PipelineMicrobatchesCountTokens) {
  // 2 pipeline stages (82 layer weights: 40 + embedding, 40 + output), 8 micro-batches of 65,536 tokens (8
  // sequences) per data-parallel rank: over 64 GPUs that is dp 4, a global batch of 4 × 8 × 8 = 256 sequences.
  Read r = read(
      "NGPU=64 ./run_train.sh --module llama3 --config llama3_70b --parallelism.pipeline_parallel_degree 2 "
      "--parallelism.num_pp_microbatches 8 --parallelism.pipeline_parallel_schedule 1F1B");
  EXPECT_EQ(r.config.pp, 2);
  EXPECT_EQ(r.config.micro_batch_size, 8);
  settle_torchtitan_world(r.world, r.config, 8);
  EXPECT_EQ(r.config.global_batch_size, 256);
  EXPECT_EQ(resolve_layout(r.model, r.config, 8).micro_batches, 8);
}

TEST(TorchtitanArgs, GlobalTokensAreGradientAccumulation) {
  // 4 × 8192-token sequences per step over 1 GPU-rank's micro-batch of 1: 4 micro-batches.
  Read r = read("NGPU=8 ./run_train.sh --config llama3_8b --training.num_tokens_per_train_step 262144");
  EXPECT_EQ(r.config.global_batch_size, 32);  // 262,144 / 8,192
  settle_torchtitan_world(r.world, r.config, 8);
  EXPECT_EQ(resolve_layout(r.model, r.config, 8).micro_batches, 4);
}

TEST(TorchtitanArgs, ErrorsNameTheFlag) {
  EXPECT_HAS(error_for("--module llama3 --config llama3_70b --parallelism.tensor_paralel_degree 4"),
             "did you mean 'parallelism.tensor_parallel_degree'");
  EXPECT_HAS(error_for("--module llama3 --config llama3_7b"), "did you mean 'llama3_8b'");
  EXPECT_HAS(error_for("--module llama3"), "needs both --module and --config");
  const std::string tokens =
      error_for("--module llama3 --config llama3_8b --training.num_tokens_per_microbatch_per_dp_rank 10000");
  EXPECT_HAS(tokens, "--training.num_tokens_per_microbatch_per_dp_rank (torchtitan command line)");
  EXPECT_HAS(tokens, "not a whole number of 8192-token sequences");
  EXPECT_HAS(error_for("--module llama3 --config llama3_70b --parallelism.enable_sequence_parallel false"),
             "without sequence parallelism is not modelled");
  EXPECT_HAS(error_for("--module llama3 --config llama3_8b --loss.num_chunks 3"), "do not split into 3 chunks");
  EXPECT_HAS(error_for("--module llama3 --config llama3_8b --compile.enable maybe"), "unexpected word 'maybe'");
  EXPECT_HAS(error_for("--module llama3 --config llama3_8b --parallelism.tensor_parallel_degree two"),
             "expected a whole number");
  // An error found by the job-TOML reader names the flag it came from, not the translation.
  EXPECT_HAS(error_for("--module llama3 --config llama3_8b --parallelism.pipeline_parallel_degree 2 "
                       "--parallelism.pipeline_parallel_schedule Foo"),
             "--parallelism.pipeline_parallel_schedule (torchtitan command line)");
  EXPECT_HAS(error_for("--module llama3 --config llama3_8b activation_checkpoint:memory-budget"),
             "memory-budget partitioning is not modelled");
  // A NUL or another control byte in the pasted text (the fuzzer's find) is refused before any word is read.
  EXPECT_HAS(error_for(std::string("--module llama3 --confi\0g llama3_8b", 35)),
             "torchtitan command line: the text has a control character or is not valid UTF-8 (byte 23)");
  EXPECT_EQ(read("--module llama3 --config llama3_8b \\\r\n--training.steps 10").model.name, "llama3-8b");  // CR LF
  // Qwen3 has no fsdpsim preset: the message asks for the model file.
  EXPECT_HAS(error_for("--module qwen3 --config qwen3_32b"), "give --model FILE");
}

TEST(TorchtitanArgs, SimulatesFromTheCommandLine) {
  const ProgramResult r =
      run_fsdpsim("simulate --no-advice --torchtitan-args \"CONFIG=llama3_8b ./run_train.sh --training.steps 10\"");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_HAS(r.output, "llama3-8b on dgx-h100-ndr, 1 nodes, 8 GPUs");
  const ProgramResult both =
      run_fsdpsim("schedule --torchtitan-args \"--module llama3 --config llama3_8b\" --torchtitan-config x.toml");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_HAS(both.output, "give one of them");
}

}  // namespace
}  // namespace fsdpsim
