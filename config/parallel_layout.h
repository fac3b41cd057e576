#pragma once
/// The job's process-group sizes, derived from the configuration and the topology's node size and checked for
/// consistency: the world must divide into TP×CP, EP×ETP and HSDP groups, and the global batch into micro-batches.

#include <cstdint>

#include "config/fsdp_config.h"
#include "model/model.h"
#include "model/model_units.h"

namespace fsdpsim {

/// Group sizes of one job (Megatron's tp-cp-ep-dp-pp rank order: pipeline stages outermost).
struct ParallelLayout {
  int32_t world_size = 1;  ///< nodes × gpus_per_node
  int32_t gpus_per_node = 1;
  int32_t tp = 1;
  int32_t cp = 1;
  int32_t ep = 1;
  int32_t etp = 1;
  int32_t pp = 1;              ///< pipeline stages: each holds world / pp consecutive ranks
  int32_t virtual_stages = 1;  ///< model chunks per pipeline rank
  int32_t dp = 1;              ///< world / (tp·cp·pp)
  int32_t outer = 1;           ///< HSDP replicas (num_distributed_optimizer_instances)
  int32_t dense_shard = 1;     ///< dense FSDP shard group: dp·cp / outer ranks, stride tp
  int32_t expert_dp = 1;       ///< expert data parallel: world / (ep·etp·pp)
  int32_t expert_shard = 1;    ///< expert FSDP shard group: expert_dp / outer
  int32_t micro_batches = 1;   ///< gradient-accumulation steps per optimizer step
  int64_t global_batch_size = 1;
  /// Megatron-LM's resolved DDP bucket size in elements (resolve_ddp_bucket_size): --ddp-bucket-size or
  /// max(40M, 1M × dp·cp) when --overlap-grad-reduce is given, else 0 (None). It splits Megatron-FSDP's non-unit
  /// parameters and no_shard's buckets, and is the optim/optim_grads communication budget.
  int64_t ddp_bucket_elems = 0;
  RankShape shape;  ///< what one rank computes per micro-batch

  /// Ranks of one pipeline stage (the whole job without pipeline parallelism).
  [[nodiscard]] int32_t stage_ranks() const { return world_size / pp; }
};

/// Resolves and checks the layout; also applies the overrides Megatron-FSDP forces (nccl_ub turns on the double
/// buffer, optim_grads_params turns on both overlaps) to `config`. Throws ConfigError naming the offending key, where
/// it was set and what would be valid.
ParallelLayout resolve_layout(const ModelSpec& model, FsdpConfig& config, int32_t gpus_per_node);

}  // namespace fsdpsim
