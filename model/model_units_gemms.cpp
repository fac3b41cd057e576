// The GEMMs of each unit, per micro-batch and per rank, with the shapes Megatron-Core runs under tensor, sequence,
// context and expert parallelism. Backward mirrors forward block by block in reverse order.
#include <vector>

#include "model/model_units_internal.h"

namespace fsdpsim {
namespace {

// The GEMMs of one forward operation and of its backward.
struct GemmBlock {
  std::vector<Gemm> fwd;
  std::vector<Gemm> bwd;
};

// A linear layer Y[m, n] = X[m, k] · Wᵀ: backward computes the data gradient dX[m, k] = dY[m, n] · W and the weight
// gradient dW[n, k] = dYᵀ · X, each with the forward's FLOPs (Narayanan et al. 2021, §5.1: backward = 2 × forward).
GemmBlock linear(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  GemmBlock block;
  block.fwd.push_back(Gemm{name, m, n, k, batch, false});
  block.bwd.push_back(Gemm{name + ".dgrad", m, k, n, batch, false});
  block.bwd.push_back(Gemm{name + ".wgrad", n, k, m, batch, false});
  return block;
}

// The attention core on this rank: batch = b·heads/tp, and q_rows·kv_cols = s(s+1)/(2cp) (query, key) pairs per
// sequence, the causal count. Forward: S = Q·Kᵀ and O = P·V. Backward as FlashAttention-2 does it (Dao 2023,
// Algorithm 2): recompute S, then dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q — 2.5× the forward FLOPs when the
// QK and V head widths are equal. Without flash attention the probabilities are stored and S is not recomputed.
GemmBlock attention_core(const UnitDims& d) {
  const int64_t q = d.attn_q_rows, kv = d.attn_kv_cols, b = d.attn_batch;
  GemmBlock block;
  block.fwd.push_back(Gemm{"attn_scores", q, kv, d.qk_head_dim, b, true});
  block.fwd.push_back(Gemm{"attn_values", q, d.v_head_dim, kv, b, true});
  if (d.shape.flash_attention) block.bwd.push_back(Gemm{"attn_scores.recompute", q, kv, d.qk_head_dim, b, true});
  block.bwd.push_back(Gemm{"attn_dv", kv, d.v_head_dim, q, b, true});
  block.bwd.push_back(Gemm{"attn_dp", q, kv, d.v_head_dim, b, true});
  block.bwd.push_back(Gemm{"attn_dq", q, d.qk_head_dim, kv, b, true});
  block.bwd.push_back(Gemm{"attn_dk", kv, d.qk_head_dim, q, b, true});
  return block;
}

// GQA: fused QKV projection on the all-gathered T tokens, attention, row-parallel output projection
// (Megatron-Core SelfAttention).
void gqa_blocks(const UnitDims& d, std::vector<GemmBlock>& out) {
  const ModelSpec& m = *d.model;
  out.push_back(linear("qkv", d.tokens, (d.heads + 2 * d.kv_heads) * m.head_dim, m.hidden_size));
  out.push_back(attention_core(d));
  out.push_back(linear("attn_proj", d.tokens, m.hidden_size, d.heads * m.head_dim));
}

// MLA (Megatron-Core MLASelfAttention): the replicated down-projections run on this rank's T/tp sequence-parallel
// tokens; the column-parallel up-projections on the all-gathered T tokens.
void mla_blocks(const UnitDims& d, std::vector<GemmBlock>& out) {
  const ModelSpec& m = *d.model;
  const MlaSpec& a = m.mla;
  if (a.q_lora_rank > 0) {
    out.push_back(linear("q_a", d.sp_tokens, a.q_lora_rank, m.hidden_size));
    out.push_back(linear("q_b", d.tokens, d.heads * d.qk_head_dim, a.q_lora_rank));
  } else {
    out.push_back(linear("q", d.tokens, d.heads * d.qk_head_dim, m.hidden_size));
  }
  out.push_back(linear("kv_a", d.sp_tokens, a.kv_lora_rank + a.qk_rope_head_dim, m.hidden_size));
  out.push_back(linear("kv_b", d.tokens, d.heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank));
  out.push_back(attention_core(d));
  out.push_back(linear("attn_proj", d.tokens, m.hidden_size, d.heads * a.v_head_dim));
}

// An MLP of width `ffn` on this rank over `rows` tokens: fc1 (gate and up fused for SwiGLU), fc2 (down).
void mlp_blocks(const UnitDims& d, const std::string& prefix, int64_t rows, int64_t ffn, int64_t batch,
                std::vector<GemmBlock>& out) {
  const ModelSpec& m = *d.model;
  const std::string up = prefix + (m.gated_mlp ? "_gate_up" : "_up");
  out.push_back(linear(up, rows, (m.gated_mlp ? 2 : 1) * ffn, m.hidden_size, batch));
  out.push_back(linear(prefix + "_down", rows, m.hidden_size, ffn, batch));
}

// MoE (Megatron-Core MoELayer): the replicated router scores this rank's T/tp tokens; each local expert runs on its
// share of the token-expert pairs (grouped GEMM, batch = local experts); shared experts are a TP-split MLP on T tokens.
void moe_blocks(const UnitDims& d, std::vector<GemmBlock>& out) {
  const ModelSpec& m = *d.model;
  out.push_back(linear("router", d.sp_tokens, m.moe.num_experts, m.hidden_size));
  mlp_blocks(d, "expert", d.expert_rows, d.expert_ffn, d.local_experts, out);
  if (d.shared_ffn > 0) mlp_blocks(d, "shared", d.tokens, d.shared_ffn, 1, out);
}

void assemble(const std::vector<GemmBlock>& blocks, UnitCost& unit) {
  for (const GemmBlock& block : blocks) unit.fwd_gemms.insert(unit.fwd_gemms.end(), block.fwd.begin(), block.fwd.end());
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    unit.bwd_gemms.insert(unit.bwd_gemms.end(), it->bwd.begin(), it->bwd.end());
  }
}

}  // namespace

void add_layer_gemms(const UnitDims& d, bool moe, UnitCost& unit) {
  std::vector<GemmBlock> blocks;
  if (d.model->mla.enabled()) {
    mla_blocks(d, blocks);
  } else {
    gqa_blocks(d, blocks);
  }
  if (moe) {
    moe_blocks(d, blocks);
  } else {
    mlp_blocks(d, "mlp", d.tokens, d.ffn, 1, blocks);
  }
  assemble(blocks, unit);
}

void add_output_gemms(const UnitDims& d, UnitCost& unit) {
  // Vocab-parallel logits on the all-gathered T tokens (Megatron's output_layer, a ColumnParallelLinear); with tied
  // embeddings the weight is the embedding's.
  GemmBlock output = linear("output", d.tokens, d.vocab_rank, d.model->hidden_size);
  if (d.shape.compute_dtype == DType::fp8 && !d.shape.fp8_output_layer) {  // marked only where it changes a dtype
    for (auto* gemms : {&output.fwd, &output.bwd}) {
      for (Gemm& g : *gemms) g.bf16_in_fp8 = true;
    }
  }
  assemble({output}, unit);
  if (d.shape.loss == LossImpl::cut_cross_entropy) {
    // Cut Cross-Entropy keeps no logits: its backward recomputes them block by block (model/loss.cpp).
    Gemm recompute = unit.fwd_gemms.front();
    recompute.name = "output.recompute";
    unit.bwd_gemms.insert(unit.bwd_gemms.begin(), recompute);
  }
}

}  // namespace fsdpsim
