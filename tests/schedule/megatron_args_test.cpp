#include "schedule/config/megatron_args.h"

#include <gtest/gtest.h>

#include "schedule/build/builder.h"
#include "schedule/ir/summary.h"
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
  EXPECT_EQ(config.main_grads_dtype, "bf16");
  EXPECT_EQ(config.where("seq_length").file, "<megatron-args --seq-length seq_length=8192>");
}

TEST(MegatronArgs, SameScheduleAsThePresetJob) {
  FsdpConfig from_args;
  std::optional<ModelSpec> model;
  apply_megatron_args(kLlama70bArgs, from_args, model);
  apply_override(from_args, "nodes=8");
  FsdpConfig from_keys;
  for (const char* kv : {"nodes=8", "seq_length=8192", "global_batch_size=128", "calculate_per_token_loss=true",
                         "init_model_with_meta_device=true", "main_grads_dtype=bf16", "grad_comm_dtype=bf16"}) {
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

TEST(MegatronArgs, Errors) {
  FsdpConfig c;
  std::optional<ModelSpec> m = model_preset("llama3-8b");
  EXPECT_NE(
      error_of([&] {
        apply_megatron_args("--micro-batch-sise 2", c, m);
      }).find("'--micro-batch-sise': unknown or unmodelled Megatron-LM flag (did you mean '--micro-batch-size'?)"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--tensor-model-parallel-size two", c, m);
            }).find("'tp': expected a whole number, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--pipeline-model-parallel-size 4", c, m);
            }).find("pipeline parallelism is not modelled"),
            std::string::npos);
  std::optional<ModelSpec> none;
  EXPECT_NE(error_of([&] {
              apply_megatron_args("--num-layers 2 --hidden-size 64 --num-attention-heads 4", c, none);
            }).find("'--vocab-size': the Megatron-LM arguments define a model but not --vocab-size"),
            std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
