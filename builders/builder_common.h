#pragma once
/// Pieces both builders share: the build context, unit registration, the collectives inside a unit (TP/CP/EP),
/// activation buffers under each recompute setting, and activation offload.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "builders/schedule_writer.h"
#include "builders/stage_plan.h"
#include "common/error.h"
#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "model/model.h"
#include "model/model_units.h"

namespace fsdpsim {

/// The work of one compute op: its GEMMs, the bytes its memory-bound kernels touch and the kernels it launches.
struct ComputeWork {
  std::vector<Gemm> gemms;
  int64_t bytes_touched = 0;
  KernelClassBytes class_bytes = {};
  int32_t kernels = 0;
};
/// A unit's forward work for Phase::fwd and Phase::recompute (a recompute re-runs the forward), its backward work for
/// Phase::bwd.
ComputeWork unit_work(const UnitCost& unit, Phase phase);

/// Everything a builder reads and the writer it appends to, and the op-construction helpers every builder uses
/// (defined in build_context_ops.cpp): each builder states which ops it adds, these how an op is put together.
struct BuildContext {
  BuildContext(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout);
  /// One pipeline stage: `units` are the stage's (stage_plan.h); the schedule info is still the whole job's.
  BuildContext(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
               std::vector<UnitCost> units);

  const ModelSpec& model;
  const FsdpConfig& config;
  const ParallelLayout& layout;
  std::vector<UnitCost> units;  ///< embedding, layer.0 … layer.L-1, output (indices match Schedule::units)
  ScheduleWriter w;
  StreamId compute;   ///< the compute (default) stream
  StreamId offload;   ///< the activation offload stream, when offloading
  StreamId tp_async;  ///< async TP and Userbuffers' ring exchange: the copy-engine TP stream, once one is used
  StreamId tp_overlap;  ///< Userbuffers' SM-driven TP overlap (tp_comm_overlap), once one is used
  StreamId ep_fused;    ///< DistMoE's dispatch and combine inside the expert GEMMs (ep_dispatch: fused), once used
  /// Overlapped TP and EP collectives of the unit being built, which the op after its compute waits for.
  std::vector<OpId> overlapped_pending;
  /// loop_holds_logits: the latest micro-batch's logits, which the next output forward or the optimizer frees.
  BufferId held_logits;
  /// Frees the held logits (if any) at the end of `op`: the step's last op that the loop's reference outlives.
  void release_held_logits(Op& op);

  /// The cost of unit `unit` (its index in `units` and in Schedule::units).
  [[nodiscard]] const UnitCost& unit_cost(int32_t unit) const { return units.at(static_cast<size_t>(unit)); }
  [[nodiscard]] int32_t layers() const { return static_cast<int32_t>(units.size()) - 2; }
  [[nodiscard]] bool is_layer(int32_t unit) const { return unit >= 1 && unit <= layers(); }
  /// The group playing `role`, created on first use with the layout's size and Megatron rank stride.
  GroupId group(GroupRole role);
  /// About how many ops the step will have (to reserve room for them).
  [[nodiscard]] int64_t expected_ops() const;

  /// A compute op of `unit` in `micro_batch` on the compute stream, named "what.<unit>.mb<k>", that does `work`,
  /// reads `reads` and waits for `deps`; returned so that the builder adds its buffers before adding it.
  Op unit_compute(std::string_view what, int32_t unit, Phase phase, int32_t micro_batch, ComputeWork work,
                  std::vector<BufferId> reads = {}, std::vector<OpId> deps = {});
  /// The same for a unit's forward, recompute or backward pass, which a fused EP exchange may run beside: its
  /// routed-expert GEMMs are first emitted as their own op (emit_fused_expert_gemms) and the returned op does the rest.
  Op unit_pass(std::string_view what, int32_t unit, Phase phase, int32_t micro_batch, ComputeWork work,
               std::vector<BufferId> reads, std::vector<OpId> deps);
  /// Adds a sync op (make_sync) of `micro_batch` (-1: of the step) and returns its id.
  OpId add_sync(std::string name, Phase phase, StreamId stream, std::vector<OpId> deps, std::vector<BufferId> frees,
                int32_t micro_batch = -1);
  /// A new buffer that `op` allocates and frees: it lives only while `op` runs (a workspace, a temporary).
  BufferId add_scratch(Op& op, const std::string& name, BufferCategory category, int64_t size_bytes);
  /// A new buffer that `op` allocates and writes, for later ops to read and free.
  BufferId add_output(Op& op, const std::string& name, BufferCategory category, int64_t size_bytes);

 private:
  GroupId add_group(GroupRole role);
  /// Per GroupRole: its group once created (every TP/CP/EP collective of every layer and micro-batch asks, and a
  /// lookup by name costs a string per ask).
  std::array<GroupId, static_cast<size_t>(GroupRole::embd) + 1> role_groups_{};
};

/// Where a unit's forward saves its activations and how backward gets them back.
struct ActivationSlot {
  BufferId saved;       ///< buffer allocated by the forward (none when nothing is saved)
  BufferId recomputed;  ///< buffer allocated by a recompute op (full recompute)
  OpId offload_op;      ///< the device→host copy (activation offload), until the reload is issued
  OpId reload_op;       ///< the host→device reload the backward waits for
};

/// The activation bookkeeping of one micro-batch.
class Activations {
 public:
  Activations(BuildContext& ctx, int32_t micro_batch);

  /// Saved bytes of `unit`'s forward under the configuration's recompute setting.
  [[nodiscard]] int64_t saved_bytes(int32_t unit) const;
  /// The first layer of the recompute chunk that `layer_unit` belongs to, or -1 when it is not recomputed.
  [[nodiscard]] int32_t chunk_start(int32_t layer_unit) const;
  /// True when `layer_unit` is the last layer of a recompute chunk (backward recomputes the chunk there).
  [[nodiscard]] bool chunk_end(int32_t layer_unit) const;
  /// Adds the saved-activation buffer to a forward op (allocs + writes) and the workspace.
  void on_forward(Op& fwd, int32_t unit);
  /// After the forward op `fwd_op` was added: offload its activations when configured.
  void after_forward(int32_t unit, OpId fwd_op);
  /// Adds recompute allocation to a recompute op.
  void on_recompute(Op& op, int32_t unit);
  /// Issues the host→device reload of `unit`'s offloaded activations (once), after `after_op` on the compute stream;
  /// the backward of `unit` then waits for it. Does nothing for units that were not offloaded.
  void reload(int32_t unit, OpId after_op);
  /// Adds reads/frees of the activations and the workspace to a backward op, and under selective_op the
  /// recomputed matmuls, elementwise bytes and re-created tensors.
  void on_backward(Op& bwd, int32_t unit);

 private:
  [[nodiscard]] bool offloaded(int32_t unit) const;
  ActivationSlot& slot_of(int32_t unit) { return slots_.at(static_cast<size_t>(unit)); }
  /// Allocates and frees each transient tensor of `op` as its own workspace buffer.
  void add_transients(Op& op, const std::vector<int64_t>& tensors, std::string_view what, std::string_view unit_name);
  BuildContext& ctx_;
  int32_t mb_;
  std::vector<ActivationSlot> slots_;
};

/// Runs a stage plan's forwards and backwards in its order: `range` is set to each action's model chunk, then
/// `forward(mb, acts)`, `backward(mb, acts)`, or for a split backward `backward_input(mb, acts)` and later
/// `backward_weight(mb, acts)`, runs with that micro-batch's activations (kept from its first forward to its last
/// backward). `actions` receives each action's op ids.
template <class Forward, class Backward, class BackwardInput, class BackwardWeight>
void run_actions(BuildContext& ctx, const StagePlan& plan, UnitRange& range, Forward forward, Backward backward,
                 BackwardInput backward_input, BackwardWeight backward_weight, std::vector<ActionOps>* actions) {
  std::map<int32_t, Activations> acts;
  for (const PipelineAction& action : plan.order) {
    range = plan.chunks.at(static_cast<size_t>(action.chunk));
    Activations& mb_acts = acts.try_emplace(action.micro_batch, ctx, action.micro_batch).first->second;
    const OpId begin = ctx.w.schedule().ops.next_id();
    switch (action.kind) {
      case PipelineAction::Kind::forward:
        forward(action.micro_batch, mb_acts);
        break;
      case PipelineAction::Kind::backward:
        backward(action.micro_batch, mb_acts);
        break;
      case PipelineAction::Kind::backward_input:
        backward_input(action.micro_batch, mb_acts);
        break;
      case PipelineAction::Kind::backward_weight:
        backward_weight(action.micro_batch, mb_acts);
        break;
    }
    actions->push_back({begin, ctx.w.schedule().ops.next_id()});
  }
}

/// The same for a builder without split backwards (Megatron-FSDP: Megatron-LM's schedules have none, and the
/// configuration check refuses zbv and dualpipev for it).
template <class Forward, class Backward>
void run_actions(BuildContext& ctx, const StagePlan& plan, UnitRange& range, Forward forward, Backward backward,
                 std::vector<ActionOps>* actions) {
  const auto unsupported = [](int32_t, Activations&) {
    FSDPSIM_CHECK(false, "a split backward reached a builder that has none");
  };
  run_actions(ctx, plan, range, forward, backward, unsupported, unsupported, actions);
}

/// Emits the unit's TP/CP/EP collectives of `phase` on the compute stream; returns their op ids. Under async TP a
/// forward TP all-gather runs on the tp_async stream beside the unit's compute, and a forward reduce-scatter is split
/// in two: the last of its tp chunks on the compute stream (no GEMM is left to hide it) and the rest on the tp_async
/// stream. Under tp_comm_overlap a decoder layer's TP collectives, forward and backward, run beside its compute on
/// the tp_async (ring exchange) or tp_overlap (SM kernels) stream, the forward reduce-scatters with the last of 4
/// splits exposed. Under ep_dispatch: fused a MoE layer's all-to-alls, forward and backward, run whole on the
/// ep_fused stream, beside the expert GEMMs emit_fused_expert_gemms() issues next. join_overlapped then makes the
/// compute stream wait for the TP ones.
std::vector<OpId> emit_unit_collectives(BuildContext& ctx, int32_t unit, Phase phase, int32_t micro_batch);

/// Under ep_dispatch: fused, before a MoE unit's compute op: its routed-expert GEMMs (those of `gemms` named
/// "expert_*") become their own compute op, emitted now with `reads` and `deps`, beside which the unit's pending fused
/// EP exchange runs, as DistMoE overlaps it with them and with nothing else; an `ep_fused_join` sync follows it.
/// Returns the other GEMMs, for the unit's op, and takes the moved GEMMs' kernels off `kernels`. Without a pending
/// fused exchange, returns `gemms` as they are and emits nothing.
std::vector<Gemm> emit_fused_expert_gemms(BuildContext& ctx, int32_t unit, Phase phase, int32_t micro_batch,
                                          std::vector<Gemm> gemms, const std::vector<BufferId>& reads,
                                          const std::vector<OpId>& deps, int32_t& kernels);

/// After a unit's compute op: a sync op on the compute stream that waits for the unit's overlapped TP chunks and EP
/// exchanges (none without async TP, tp_comm_overlap or a fused EP dispatch).
void join_overlapped(BuildContext& ctx, int32_t unit, Phase phase, int32_t micro_batch);

/// Model FLOPs and tokens of the step, and the other ScheduleInfo fields.
ScheduleInfo make_schedule_info(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                                const std::vector<UnitCost>& units);

/// Bytes Adam(W) moves per parameter element, given the element sizes of the weight, its gradient and the two
/// moments. fused: one pass reading all four and writing the weight and moments. foreach (torch/optim/adam.py
/// _multi_tensor_adam, PyTorch 2.11): decoupled decay (r/w weight), lerp (r m, g; w m), mul (r/w v), addcmul (r v, g;
/// w v), sqrt (r v; w t), div and add (r/w t), addcdiv (r weight, m, t; w weight), with t a temporary of v's dtype:
/// 4w + 2g + 3m + 5v + 6t. Measured on an H100: 10.4 ms for 350 M fp32 elements, 80 B each at 2.7 TB/s
/// (bench/results/2026-11-26-h100-frameworks.md).
int64_t adam_bytes_per_element(OptimizerImpl impl, int64_t weight, int64_t grad, int64_t exp_avg, int64_t exp_avg_sq);

/// Kernels one Adam(W) step launches over the parameter tensors of `units` (`elems` elements on this rank).
/// ATen's multi_tensor_apply (ATen/native/cuda/MultiTensorApply.cuh) launches when its argument fills: 36 tensors
/// for the fused kernel's four lists and 48 for foreach's three, or 320 blocks of 65,536 elements. The fused step is
/// one such call; foreach's _multi_tensor_adam makes eight (decay, lerp, mul, addcmul, sqrt, div, add, addcdiv).
int32_t adam_kernels(OptimizerImpl impl, const std::vector<UnitCost>& units, int64_t elems);

/// "what.unit.mb3" style op and buffer names: `what`, then ".unit" unless the unit name is empty, then ".mb<k>" for a
/// micro-batch ≥ 0. Built in one allocation: a step of 128 micro-batches names some 250,000 ops and buffers, and the
/// sweep builds thousands of steps.
std::string op_name(std::string_view what, std::string_view unit_name, int32_t micro_batch);
/// The same with `what` in two parts ("ag" + ".bwd", "tmp.fwd" + "3"), joined without a temporary string.
std::string op_name(std::string_view what, std::string_view what_suffix, std::string_view unit_name,
                    int32_t micro_batch);

}  // namespace fsdpsim
