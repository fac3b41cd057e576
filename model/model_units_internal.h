#pragma once
/// Internals of derive_units (not part of the public API): the per-rank sizes every unit builder needs, and the
/// builders of each unit's GEMMs, collectives and memory figures, one file each.

#include <cstdint>

#include "model/model_units.h"

namespace fsdpsim {

/// Per-rank sizes derived once from the model and the rank shape (T = b·s/cp tokens; sequence parallelism holds
/// T/tp of them between blocks).
struct UnitDims {
  const ModelSpec* model = nullptr;
  RankShape shape;
  int64_t act_bytes = 2;        ///< bytes per activation element (activation_dtype)
  int64_t tokens = 0;           ///< T = b·s/cp: tokens the TP-split linear layers see (after the SP all-gather)
  int64_t sp_tokens = 0;        ///< T/tp: tokens a rank holds between blocks (norms, residuals, router)
  int64_t heads = 0;            ///< query heads on this rank: heads/tp
  int64_t kv_heads = 0;         ///< key/value heads on this rank: kv_heads/tp (= heads with MLA)
  int64_t qk_head_dim = 0;      ///< width of one Q·Kᵀ dot product
  int64_t v_head_dim = 0;       ///< width of one value head
  int64_t attn_batch = 0;       ///< b·heads/tp: the batch of the attention GEMMs
  int64_t attn_q_rows = 0;      ///< attention GEMM rows and key columns with q_rows·kv_cols = s(s+1)/(2cp),
  int64_t attn_kv_cols = 0;     ///< the causal (query, key) pairs of one sequence on this rank
  int64_t score_elems = 0;      ///< elements of a materialised score matrix: b·heads/tp·(s/cp)·s
  int64_t padded_vocab = 0;     ///< the vocabulary padded to a multiple of 128·tp
  int64_t vocab_rank = 0;       ///< padded_vocab/tp: this rank's slice of the vocabulary
  int64_t ffn = 0;              ///< dense MLP width on this rank: ffn/tp
  int64_t shared_ffn = 0;       ///< shared-expert MLP width on this rank: num_shared·width/tp
  int64_t expert_ffn = 0;       ///< routed-expert width on this rank: expert_ffn/etp
  int64_t local_experts = 0;    ///< num_experts/ep
  int64_t dispatch_tokens = 0;  ///< token copies this rank routes to experts: T/tp·top_k
  /// token copies the all-to-all delivers to this rank's experts: dispatch_tokens × moe_routing_skew
  int64_t received_tokens = 0;
  int64_t expert_pairs = 0;  ///< token-expert pairs this rank's experts process: received_tokens·etp
  int64_t expert_rows = 0;   ///< tokens per local expert: ceil(expert_pairs / local_experts)
};

/// Forward and backward GEMMs of decoder layer (MoE or dense MLP), in execution order.
void add_layer_gemms(const UnitDims& d, bool moe, UnitCost& unit);
/// The output projection (logits) GEMMs.
void add_output_gemms(const UnitDims& d, UnitCost& unit);

/// TP sequence-parallel, CP and EP collectives of a decoder layer, per micro-batch.
void add_layer_collectives(const UnitDims& d, bool moe, UnitCost& unit);
void add_embedding_collectives(const UnitDims& d, UnitCost& unit);
void add_output_collectives(const UnitDims& d, UnitCost& unit);

/// Memory-bound bytes, saved activations per recompute mode, and workspaces.
void add_layer_memory(const UnitDims& d, bool moe, UnitCost& unit);
void add_embedding_memory(const UnitDims& d, UnitCost& unit);
void add_output_memory(const UnitDims& d, UnitCost& unit);

/// Kernels per micro-batch (UnitCost::fwd_kernels, ...). After the GEMMs and the memory figures; a layer's after
/// add_layer_op_sac too.
void add_layer_kernels(const UnitDims& d, bool moe, UnitCost& unit);
void add_mtp_kernels(const UnitDims& d, UnitCost& unit);
void add_embedding_kernels(const UnitDims& d, UnitCost& unit);
void add_output_kernels(const UnitDims& d, UnitCost& unit);

/// torchtitan's op-level selective checkpointing of a decoder layer: what it saves and what it recomputes. Needs
/// the layer's GEMMs and memory figures.
void add_layer_op_sac(const UnitDims& d, UnitCost& unit);

}  // namespace fsdpsim
