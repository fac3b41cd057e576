#include "schedule/config/fsdp_config.h"

#include <gtest/gtest.h>

#include "schedule/config/parallel_layout.h"
#include "schedule/model/model.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

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
