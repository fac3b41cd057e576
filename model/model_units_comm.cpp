// Collectives inside each unit, per micro-batch and per rank, following ir.h's Op conventions: all_gather recv =
// send × group size; reduce_scatter send = recv × group size; all_reduce and all_to_all send = recv.
//
// - TP with sequence parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
//   Models", §4.2.2; Megatron-Core tensor_parallel/mappings.py): an all-gather of the T/tp-token input before each
//   TP-split block and a reduce-scatter of its T-token output after it; backward mirrors them and all-gathers the
//   block input again for the weight gradient (LinearWithGradAccumulationAndAsyncCommunication keeps only the
//   sequence-parallel shard).
// - CP: ring attention passes K and V around the cp group (Megatron-Core / Transformer Engine
//   AttnFuncWithCPAndKVP2P); modelled as an all-gather of this rank's K and V in forward, and in backward another
//   all-gather of K, V (the ring passes them again) plus a reduce-scatter of their gradients.
// - EP: token dispatch and combine all-to-alls of T/tp·top_k hidden vectors in forward and in backward (Megatron-Core
//   MoEAlltoAllTokenDispatcher); expert TP adds an all-gather of the dispatched tokens over "etp" and a
//   reduce-scatter of the expert outputs.
#include "model/model_units_internal.h"

namespace fsdpsim {
namespace {

UnitCollective all_gather(const std::string& name, GroupRole group, int64_t size, int64_t shard_bytes) {
  return UnitCollective{name, OpKind::all_gather, group, shard_bytes, shard_bytes * size};
}

UnitCollective reduce_scatter(const std::string& name, GroupRole group, int64_t size, int64_t shard_bytes) {
  return UnitCollective{name, OpKind::reduce_scatter, group, shard_bytes * size, shard_bytes};
}

UnitCollective all_reduce(const std::string& name, GroupRole group, int64_t bytes) {
  return UnitCollective{name, OpKind::all_reduce, group, bytes, bytes};
}

UnitCollective all_to_all(const std::string& name, GroupRole group, int64_t bytes) {
  return UnitCollective{name, OpKind::all_to_all, group, bytes, bytes};
}

// Elements per token this rank's attention block all-gathers over TP before its GEMMs: the hidden state for GQA;
// for MLA the compressed q, kv and the rotary key part (the down-projections run on the T/tp local tokens).
int64_t attention_gather_width(const ModelSpec& m) {
  if (!m.mla.enabled()) return m.hidden_size;
  const int64_t q = m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : m.hidden_size;
  return q + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
}

// The sequence-parallel pattern around one TP-split block whose input is `in_width` wide per token and whose
// input for the weight gradient is `wgrad_width` wide (0: saved whole, no re-gather).
void tp_block(const UnitDims& d, const std::string& block, int64_t in_width, int64_t wgrad_width,
              std::vector<UnitCollective>& fwd, std::vector<UnitCollective>& bwd_in_order) {
  const int64_t tp = d.shape.tp, a = d.act_bytes, h = d.model->hidden_size;
  fwd.push_back(all_gather("tp_ag_" + block, GroupRole::tp, tp, d.sp_tokens * in_width * a));
  // (the block's GEMMs run here)
  fwd.push_back(reduce_scatter("tp_rs_" + block, GroupRole::tp, tp, d.sp_tokens * h * a));
  bwd_in_order.push_back(all_gather("tp_ag_" + block + "_grad", GroupRole::tp, tp, d.sp_tokens * h * a));
  if (wgrad_width > 0) {
    bwd_in_order.push_back(all_gather("tp_ag_" + block + "_input", GroupRole::tp, tp, d.sp_tokens * wgrad_width * a));
  }
  bwd_in_order.push_back(reduce_scatter("tp_rs_" + block + "_grad", GroupRole::tp, tp, d.sp_tokens * in_width * a));
}

void cp_exchange(const UnitDims& d, std::vector<UnitCollective>& fwd, std::vector<UnitCollective>& bwd) {
  const int64_t kv_bytes = d.tokens * d.kv_heads * (d.qk_head_dim + d.v_head_dim) * d.act_bytes;
  fwd.push_back(all_gather("cp_ag_kv", GroupRole::cp, d.shape.cp, kv_bytes));
  bwd.push_back(all_gather("cp_ag_kv_bwd", GroupRole::cp, d.shape.cp, kv_bytes));
  bwd.push_back(reduce_scatter("cp_rs_dkv", GroupRole::cp, d.shape.cp, kv_bytes));
}

// With a skewed routing the busiest rank receives received_tokens in the dispatch (and sends them back in the combine)
// against the dispatch_tokens it sends: its link carries the larger side, and every member waits for it.
void ep_exchange(const UnitDims& d, std::vector<UnitCollective>& fwd, std::vector<UnitCollective>& bwd) {
  const int64_t bytes = d.received_tokens * d.model->hidden_size * d.act_bytes;
  const int64_t etp = d.shape.etp;
  if (d.shape.ep > 1) fwd.push_back(all_to_all("ep_dispatch", GroupRole::ep, bytes));
  if (etp > 1) fwd.push_back(all_gather("etp_ag_dispatch", GroupRole::etp, etp, bytes));
  if (etp > 1) fwd.push_back(reduce_scatter("etp_rs_combine", GroupRole::etp, etp, bytes));
  if (d.shape.ep > 1) fwd.push_back(all_to_all("ep_combine", GroupRole::ep, bytes));
  if (d.shape.ep > 1) bwd.push_back(all_to_all("ep_combine_grad", GroupRole::ep, bytes));
  if (etp > 1) bwd.push_back(all_gather("etp_ag_combine_grad", GroupRole::etp, etp, bytes));
  if (etp > 1) bwd.push_back(reduce_scatter("etp_rs_dispatch_grad", GroupRole::etp, etp, bytes));
  if (d.shape.ep > 1) bwd.push_back(all_to_all("ep_dispatch_grad", GroupRole::ep, bytes));
}

}  // namespace

void add_layer_collectives(const UnitDims& d, bool moe, UnitCost& unit) {
  const ModelSpec& m = *d.model;
  std::vector<UnitCollective> attn_bwd, mlp_bwd;
  const bool tp = d.shape.tp > 1;
  // Attention: MLA re-gathers the compressed q and kv for the up-projections' weight gradients (not the rotary key,
  // which has no weight after it); GQA re-gathers the hidden state for the QKV weight gradient.
  const int64_t attn_width = attention_gather_width(m);
  const int64_t attn_wgrad = m.mla.enabled() ? attn_width - m.mla.qk_rope_head_dim : attn_width;
  if (tp) tp_block(d, "attn", attn_width, attn_wgrad, unit.fwd_collectives, attn_bwd);
  if (d.shape.cp > 1) {
    // K and V exist between the two attention TP collectives: put the exchange there.
    std::vector<UnitCollective> cp_fwd, cp_bwd;
    cp_exchange(d, cp_fwd, cp_bwd);
    unit.fwd_collectives.insert(unit.fwd_collectives.end() - (tp ? 1 : 0), cp_fwd.begin(), cp_fwd.end());
    attn_bwd.insert(attn_bwd.begin() + (tp ? 1 : 0), cp_bwd.begin(), cp_bwd.end());
  }
  if (moe) {
    // Routed experts see the T/tp local tokens (no TP gather); only the TP-split shared experts need one.
    std::vector<UnitCollective> ep_bwd;
    ep_exchange(d, unit.fwd_collectives, ep_bwd);
    if (tp && d.shared_ffn > 0) tp_block(d, "mlp", m.hidden_size, m.hidden_size, unit.fwd_collectives, mlp_bwd);
    mlp_bwd.insert(mlp_bwd.end(), ep_bwd.begin(), ep_bwd.end());
  } else if (tp) {
    tp_block(d, "mlp", m.hidden_size, m.hidden_size, unit.fwd_collectives, mlp_bwd);
  }
  unit.bwd_collectives = mlp_bwd;
  unit.bwd_collectives.insert(unit.bwd_collectives.end(), attn_bwd.begin(), attn_bwd.end());
}

void add_embedding_collectives(const UnitDims& d, UnitCost& unit) {
  if (d.shape.tp == 1) return;
  const int64_t tp = d.shape.tp, a = d.act_bytes, h = d.model->hidden_size;
  // Each rank looks up only its vocabulary slice, so the embedding output is a partial sum over TP. Megatron
  // reduce-scatters it into the sequence-parallel layout; with learned positions it all-reduces, adds the
  // positions and then splits the sequence (LanguageModelEmbedding, reduce_scatter_embeddings).
  if (d.model->position_embedding == PositionEmbedding::learned) {
    unit.fwd_collectives.push_back(all_reduce("tp_ar_embedding", GroupRole::tp, d.tokens * h * a));
  } else {
    unit.fwd_collectives.push_back(reduce_scatter("tp_rs_embedding", GroupRole::tp, tp, d.sp_tokens * h * a));
  }
  unit.bwd_collectives.push_back(all_gather("tp_ag_embedding_grad", GroupRole::tp, tp, d.sp_tokens * h * a));
}

void add_output_collectives(const UnitDims& d, UnitCost& unit) {
  if (d.shape.tp == 1) return;
  const int64_t tp = d.shape.tp, a = d.act_bytes, h = d.model->hidden_size;
  unit.fwd_collectives.push_back(all_gather("tp_ag_output", GroupRole::tp, tp, d.sp_tokens * h * a));
  // Vocab-parallel cross-entropy (Megatron's _VocabParallelCrossEntropy): all-reduces of the per-token logit maximum,
  // the target logit and the sum of exponentials, each T fp32 values.
  const int64_t per_token_fp32 = d.tokens * 4;
  unit.fwd_collectives.push_back(all_reduce("tp_ar_ce_max", GroupRole::tp, per_token_fp32));
  unit.fwd_collectives.push_back(all_reduce("tp_ar_ce_target", GroupRole::tp, per_token_fp32));
  unit.fwd_collectives.push_back(all_reduce("tp_ar_ce_sum_exp", GroupRole::tp, per_token_fp32));
  unit.bwd_collectives.push_back(all_gather("tp_ag_output_input", GroupRole::tp, tp, d.sp_tokens * h * a));
  unit.bwd_collectives.push_back(reduce_scatter("tp_rs_output_grad", GroupRole::tp, tp, d.sp_tokens * h * a));
}

}  // namespace fsdpsim
