#pragma once
/// Megatron-FSDP's parameter buckets (docs/architecture.md §4.6.1): one bucket per (unit, dtype, dense|expert),
/// coalesced per (unit, dense|expert) into one collective; non-unit parameters (embedding, final norm, output layer)
/// split by Megatron-LM's bucket size ([embedding] and [final norm, output] once the embedding alone reaches it);
/// no_shard has no units and splits every parameter by that size. Every sharded bucket is padded to a multiple of
/// shard-group size × chunk factor. Also the communication budget that sets the all-gather prefetch depth and the
/// reduce-scatter queue (§4.6.2, §4.6.4).

#include <cstdint>
#include <string>
#include <vector>

#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model_units.h"
#include "schedule/ids.h"

namespace fsdpsim {

/// The id of a bucket group: its position in BucketPlan::groups (the bucket-ID order).
struct BucketGroupTag;
using BucketGroupId = Id<BucketGroupTag>;

/// Every bucket of one (unit, dense|expert) pair: one coalesced all-gather / reduce-scatter.
struct BucketGroup {
  std::string name;            ///< "layer.3", "layer.3.experts", "non_unit", "non_unit.output", "bucket.7"
  std::vector<int32_t> units;  ///< unit indices covered, ascending (the group's gradients complete at the first)
  bool expert = false;
  bool non_unit = false;    ///< embedding / final norm / output layer, or a no_shard bucket: never released
  int32_t group_ranks = 1;  ///< ranks of its data-parallel group (dense or expert shard group): the reduction
  int32_t shard_size = 1;   ///< ranks sharing the bucket: group_ranks when sharded, 1 for no_shard
  /// Megatron's is_data_distributed: sharded and over more than one rank. A bucket that is not (no_shard, or an
  /// expert shard group of one rank) keeps its full weights and gradients in persistent buffers: no all-gather
  /// bucket, no unsharded gradient bucket (DataParallelBuffer.fetch_bucket, MegatronFSDP _grad_acc).
  bool distributed = true;
  int64_t elems = 0;             ///< parameters, unpadded
  int64_t padded_elems = 0;      ///< Σ buckets padded to a multiple of shard_size × chunk factor
  int64_t fp8_padded_elems = 0;  ///< of which FP8 GEMM weights (FP8 parameters), one byte each
  int64_t gathered_bytes = 0;    ///< the unsharded bucket in the compute dtypes (fp8 linear weights, bf16 the rest)
  [[nodiscard]] int64_t shard_elems() const { return padded_elems / shard_size; }
  [[nodiscard]] int64_t shard_bytes() const { return gathered_bytes / shard_size; }
};

/// The bucket groups of a model in bucket-ID order (non-unit group first), and the communication budget.
struct BucketPlan {
  IdVector<BucketGroupId, BucketGroup> groups;
  std::vector<std::vector<BucketGroupId>> unit_groups;  ///< unit index → its bucket groups, ascending
  /// X, resolved (suggested_communication_unit_size): suggested_RS_queue_capacity = X, suggested_AG_prefetch_size
  /// = X / 2 (the builder's two tests, BudgetRange).
  int64_t communication_budget_elems = 0;
  std::vector<BucketGroupId> non_unit_groups;  ///< the groups of embedding / final norm / output, ascending
  int32_t prefetch_depth = 0;                  ///< units gathered ahead of the current one, for a typical layer

  /// The bucket groups of unit `unit`, ascending.
  [[nodiscard]] const std::vector<BucketGroupId>& groups_of(int32_t unit) const {
    return unit_groups.at(static_cast<size_t>(unit));
  }
};

/// Plans the buckets of `units` under `config` (sharded over the layout's shard groups).
BucketPlan plan_megatron_buckets(const std::vector<UnitCost>& units, const FsdpConfig& config,
                                 const ParallelLayout& layout);

/// Elements of a unit's GEMM weights (what FP8 parameters store in one byte); the rest (norms, biases) stay BF16, and
/// so do the weights of a layer left in BF16 under FP8 (Gemm::bf16_in_fp8).
int64_t linear_weight_elems(const UnitCost& unit, bool expert);

}  // namespace fsdpsim
