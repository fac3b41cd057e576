#pragma once
/// Internal to the Megatron-FSDP builder: the state it keeps while it writes one step — the all-gather pipeline's
/// bucket states (AllGatherPipeline), the reduce-scatter queue (GradReducePipeline) and the persistent buffers.
/// Each method follows the Megatron-FSDP function named in its comment (docs/architecture.md §4.6).

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "builders/budget_range.h"
#include "builders/builder_common.h"
#include "builders/megatron_buckets.h"
#include "builders/stage_plan.h"

namespace fsdpsim {

/// Whether an all-gather request also prefetches the next bucket groups within the budget, and in which direction
/// the model is being walked (AllGatherPipeline.all_gather_params' prefetch and its bwd flag).
enum class Prefetch : uint8_t { none, forward, backward };

/// State of one bucket group in the all-gather pipeline (AllGatherPipeline.bucket_status).
enum class AgStatus : uint8_t { empty, in_flight, ready };

/// One bucket group's gathered weights.
struct AgState {
  AgStatus status = AgStatus::empty;
  BufferId buffer;          ///< the gathered buffer (a persistent one for non-units, pools and ZeRO-0/1/2)
  OpId ag_op;               ///< the all-gather that filled it, until the compute stream waited for it
  bool releasable = false;  ///< lazily releasable (root pre-backward; recycled at the next all-gather allocation)
};

/// A gradient bucket whose reduce-scatter has been issued and not yet joined by the compute stream.
struct QueuedReduce {
  OpId last_op;                   ///< the last op of its reduction on the reduce-scatter stream
  std::vector<BufferId> buffers;  ///< unsharded gradient buffers to free when it is joined
  int64_t elems = 0;
};

/// Writes one Megatron-FSDP step.
class MegatronBuilder {
 public:
  MegatronBuilder(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout);
  /// One pipeline stage's builder: `units` are StagePlan::units.
  MegatronBuilder(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                  std::vector<UnitCost> units);
  Schedule build();
  /// Builds the plan's actions in its order; `actions` receives each action's op ids.
  Schedule build(const StagePlan& plan, std::vector<ActionOps>* actions);
  /// After build(): the communication budgets that build the same schedule.
  [[nodiscard]] const BudgetRange& budget_range() const { return budget_range_; }

 private:
  [[nodiscard]] bool zero3() const;
  [[nodiscard]] bool shards_grads() const;
  [[nodiscard]] bool hsdp() const { return ctx_.layout.outer > 1; }
  [[nodiscard]] bool hfsdp() const;
  [[nodiscard]] int64_t grad_bytes(const BucketGroup& g) const;
  [[nodiscard]] bool uses_pool(BucketGroupId group) const;
  [[nodiscard]] GroupId shard_group(const BucketGroup& g);
  /// The double buffer's slot of a unit: consecutive units alternate between the two.
  [[nodiscard]] static size_t pool_slot(int32_t unit) { return static_cast<size_t>(unit % 2); }

  // Setup (MegatronFSDP._init_fsdp_param_and_grad_buffer, ParamAndGradBuffer._init_each_parameter_group_buffers).
  void setup_streams();
  void add_persistent_buffers();
  /// Registers `buffer` with NCCL under nccl_ub (a buffer of the NCCL memory pool); returns it.
  BufferId registered_if_ub(BufferId buffer);
  /// ZeRO-3: the dense and expert parameter shards (`shard_bytes`), the MXFP8 transpose shard, and the gathered
  /// buffers of the buckets that are never released.
  void add_param_shards(const std::array<int64_t, 2>& shard_bytes);
  /// ZeRO-0/1/2: every bucket's full weights.
  void add_full_params();
  /// The main weights and Adam's state over the elements this rank updates.
  void add_optimizer_buffers(const std::array<int64_t, 2>& shard_elems, int64_t full_elems);
  /// The sharded main grads (ZeRO-2/3, `shard_elems` dense and expert) or every bucket's full gradients.
  void add_grad_buffers(const std::array<int64_t, 2>& shard_elems);
  /// tp_comm_overlap: Transformer Engine's Userbuffers.
  void add_userbuffers();
  void add_double_buffer_pools();

  // All-gather pipeline (AllGatherPipeline.all_gather_params, wait_bucket_ready, release_bucket).
  [[nodiscard]] std::vector<BucketGroupId> prefetch_list(const std::vector<BucketGroupId>& requested,
                                                         Prefetch direction);
  void gather(const std::vector<BucketGroupId>& requested, Prefetch prefetch, Phase phase, int32_t mb);
  void issue_all_gather(BucketGroupId group, Phase phase, int32_t mb);
  void recycle_releasable(int32_t mb);
  /// The buffers holding `groups`' gathered weights, which a unit's compute op reads.
  [[nodiscard]] std::vector<BufferId> gathered_buffers(const std::vector<BucketGroupId>& groups) const;
  std::vector<OpId> wait_for(const std::vector<BucketGroupId>& groups);
  void release(const std::vector<BucketGroupId>& groups, Op& op);
  /// Adds a data-parallel all-gather or reduce-scatter behind the previous collective on its NCCL communicator.
  OpId add_on_communicator(Op op);
  [[nodiscard]] bool fp8_transpose_buffer() const;  ///< MXFP8 parameters: a gathered transpose buffer
  [[nodiscard]] bool fp8_transpose_cache() const;   ///< other FP8 recipes: a transpose built after backward AG

  // The step.
  void start_param_sync();
  /// The forward and backward of one micro-batch through the units of `range_` (one model chunk).
  void forward(int32_t mb, Activations& acts);
  void backward(int32_t mb, Activations& acts);
  void recompute_chunk(int32_t first_unit, int32_t last_unit, Activations& acts, int32_t mb);
  void backward_unit(int32_t unit, Activations& acts, int32_t mb);
  void grad_buckets_for(int32_t unit, Op& bwd, int32_t mb);
  void reduce_group(BucketGroupId group, int32_t mb);
  /// HSDP/HFSDP on the last micro-batch: the outer reduction of `accumulated` after `after`; none otherwise.
  OpId reduce_outer(BucketGroupId group, int32_t mb, OpId after, BufferId accumulated);
  /// Joins the oldest queued reductions while the queue holds more than the budget; `budget_elems` 0: all of them
  /// (the root post-backward's reset).
  void pop_reduce_queue(int64_t budget_elems, int32_t mb);
  void finalize();

  BuildContext ctx_;
  UnitRange range_;  ///< the model chunk the current action walks (Megatron wraps each chunk on its own)
  BucketPlan plan_;
  BudgetRange budget_range_;  ///< what the budget was compared with so far
  IdVector<BucketGroupId, AgState> ag_;
  /// Per bucket group: this micro-batch's unsharded grads.
  IdVector<BucketGroupId, std::vector<BufferId>> grad_buffers_;
  std::deque<QueuedReduce> rs_queue_;
  std::vector<BucketGroupId> deferred_reductions_;  ///< groups reduced after backward (overlap_grad_reduce off)
  StreamId ag_stream_, rs_stream_, outer_rs_stream_, outer_ag_stream_;
  BufferId param_shard_, param_shard_expert_;  ///< compute-weight shards (ZeRO-3)
  BufferId grad_shard_, grad_shard_expert_;    ///< sharded main grads (ZeRO-2/3)
  BufferId main_weights_, optimizer_state_;
  int64_t optimizer_elems_ = 0;                   ///< elements the optimizer updates on this rank
  IdVector<BucketGroupId, BufferId> full_grads_;  ///< ZeRO-0/1: per group persistent full gradient buffers
  std::vector<BufferId> param_pool_, grad_pool_;  ///< fsdp_double_buffer slots
  BufferId param_shard_transpose_;                ///< MXFP8: the column-wise FP8 weight shards
  int64_t modal_unit_bytes_ = -1;                 ///< gathered bytes of the units that use the pool
};

}  // namespace fsdpsim
