#pragma once
/// Pipeline parallelism, as pure arithmetic the builders drive: how the decoder layers split into model chunks
/// (Megatron-core's rules for uneven first and last stages and for counting the embedding and the loss as layers),
/// and the order in which each pipeline rank runs its forwards and backwards under GPipe, 1F1B and interleaved 1F1B.

#include <cstdint>
#include <vector>

#include "config/fsdp_config.h"

namespace fsdpsim {

/// One forward or one backward of one micro-batch through one model chunk of a pipeline rank. The zero-bubble
/// schedules split a backward in two: the input gradients (what the previous stage waits for) and, later, the weight
/// gradients (torch.distributed.pipelining's I and W actions; B is the whole backward).
struct PipelineAction {
  enum class Kind : uint8_t { forward, backward, backward_input, backward_weight };
  Kind kind = Kind::forward;
  int32_t micro_batch = 0;
  /// The model chunk on this rank, 0 … virtual_stages-1; its place in the model is virtual_stage_of(chunk, rank).
  int32_t chunk = 0;
  bool operator==(const PipelineAction&) const = default;
};

/// The order of one pipeline rank's actions for one optimizer step.
using PipelineOrder = std::vector<PipelineAction>;

/// The virtual stage (place in the model, 0 … pp·virtual_stages-1) of a rank's chunk: chunk·pp + rank for the looped
/// schedules; for the V-shaped ones (zbv, dualpipev) rank for chunk 0 and 2pp-1-rank for chunk 1
/// (torch.distributed.pipelining's generate_stage_to_rank_mapping, style "v").
int32_t virtual_stage_of(PipelineSchedule schedule, int32_t pp, int32_t chunk, int32_t rank);
/// The pipeline rank holding a virtual stage (the inverse of virtual_stage_of).
int32_t rank_of_virtual_stage(PipelineSchedule schedule, int32_t pp, int32_t virtual_stage);

/// Every rank's order (index: pipeline rank 0 … pp-1). Throws ConfigError when the schedule cannot run these
/// counts (interleaved 1F1B needs micro_batches divisible by pp and virtual_stages > 1; zbv and dualpipev exactly
/// two, dualpipev at least 2·pp micro-batches; the others virtual_stages 1).
std::vector<PipelineOrder> pipeline_orders(PipelineSchedule schedule, int32_t pp, int32_t virtual_stages,
                                           int32_t micro_batches);
/// The same for the configuration's pp, virtual_pipeline_stages and pipeline_schedule; errors point at the source of
/// the key they name.
std::vector<PipelineOrder> pipeline_orders(const FsdpConfig& config, int32_t micro_batches);

/// Forwards a rank runs before its steady state (Megatron's num_warmup_microbatches, counted in chunk forwards): when
/// a steady state follows, its first forward still precedes the first backward. GPipe: every micro-batch; pp 1: none.
int32_t warmup_forwards(PipelineSchedule schedule, int32_t pp, int32_t virtual_stages, int32_t micro_batches,
                        int32_t rank);

/// How the decoder layers split across the pp·virtual_stages model chunks.
struct LayerSplit {
  /// Decoder layers of each virtual stage, in model order (virtual stage chunk·pp + rank).
  std::vector<int32_t> layers_per_virtual_stage;
  /// The model's first layer index of each virtual stage (prefix sums).
  std::vector<int32_t> first_layer;
};

/// Splits `layers` decoder layers (Megatron-core get_num_layers_to_build / get_transformer_layer_offset): an even
/// split by default; `first_stage_layers` / `last_stage_layers` (> 0) fix the first and last pipeline rank's layers
/// and the rest split evenly; account_for_embedding / account_for_loss count the embedding / the loss as one layer
/// of the first / last virtual stage. Throws ConfigError (naming the config key and a valid alternative) when the
/// layers do not divide.
LayerSplit split_layers(int32_t layers, const FsdpConfig& config);

/// Whether a stage's next compute goes on without waiting for its previous send (FsdpConfig::overlap_p2p_comm, auto
/// resolved per framework). Throws ConfigError when `true` is asked of Megatron-LM's non-interleaved schedules, which
/// never overlap (validate_args sets overlap_p2p_comm False without virtual stages).
bool p2p_overlaps_compute(const FsdpConfig& config);

/// torchtitan's split when no layers per stage are given (generate_llm_fqn_per_model_part): the embedding and the
/// output count as one layer each, every virtual stage gets ⌊(layers + 2) / stages⌋ and the first (layers + 2) mod
/// stages one more. Throws ConfigError (key `pp`) when a stage would hold fewer than the one layer an end counts for.
LayerSplit torchtitan_split_layers(int32_t layers, const FsdpConfig& config);

}  // namespace fsdpsim
