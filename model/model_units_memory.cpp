// Memory figures of each unit, per micro-batch and per rank: bytes touched by memory-bound kernels, activations saved
// for backward under each recompute mode, and transient workspaces.
//
// Saved activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv:2205.05198), §4: a GPT layer saves sbh(34 + 5as/h) bytes in 16-bit, divided by t with tensor and sequence
// parallelism; selective recompute drops the 5as²b attention-core term; full recompute keeps only the 2sbh layer
// input. Their 34 counts two 1-byte dropout masks (sbh each) that models trained without dropout do not have
// (Llama, Mixtral, DeepSeek, Qwen), so without dropout a GPT layer saves 32sbh/t + 2as²b/t. The terms below
// generalise each of theirs to GQA, SwiGLU, RMSNorm, MLA and MoE, with s·b/cp = T tokens per rank (T/t between
// blocks under sequence parallelism) and `a` bytes per activation element.
#include <algorithm>

#include "model/model_units_internal.h"

namespace fsdpsim {
namespace {

constexpr int64_t kFp32Bytes = 4;
constexpr int64_t kIndexBytes = 8;  // int64 token ids (Megatron's get_batch)

// Fused norms save per-token fp32 statistics: LayerNorm the mean and 1/σ, RMSNorm 1/rms (Apex/TE fused kernels).
int64_t norm_stat_bytes(const ModelSpec& m) {
  return m.norm == NormKind::layernorm ? 2 * kFp32Bytes : kFp32Bytes;
}

int64_t act_factor(const ModelSpec& m, int64_t gated, int64_t plain) {
  return m.gated_mlp ? gated : plain;
}

// Transformer Engine's FP8 linears keep, for the weight gradient, the FP8 tensor they cast their input to, not the
// 16-bit input: _Linear saves the FP8 cast or its FP8 transpose, _LayerNormLinear its norm output written as FP8 by
// the fused norm (ln_out as uint8), 1 byte an element (transformer_engine/pytorch/module/linear.py and
// layernorm_linear.py @ 3ec87875, the forward's save_for_backward; GroupedLinear keeps its experts' inputs alike).
// torchao's Float8Linear saves the high-precision input and casts it again in backward (RankShape::fp8_saved_inputs
// false). So a tensor saved only as a linear's input takes linear_input_bytes an element, and one another op also
// keeps in 16 bits (O, for the attention backward) gains fp8_input_copy_bytes for the linear's own cast.
int64_t linear_input_bytes(const UnitDims& d) {
  return d.shape.fp8_saved_inputs ? 1 : d.act_bytes;
}
int64_t fp8_input_copy_bytes(const UnitDims& d) {
  return d.shape.fp8_saved_inputs ? 1 : 0;
}

// Korthikanti's attention-core term, which selective recompute removes. FlashAttention (Dao et al. 2022, §3.1;
// FlashAttention-2 keeps the row log-sum-exp) stores no s×s matrix, only O (counted as the projection input) and one
// fp32 log-sum-exp per query row and head; without it the softmax output, b·(heads/t)·(s/cp)·s elements, is stored
// (their 5as²b/t minus the dropout mask and output).
int64_t attention_core_saved(const UnitDims& d) {
  if (d.shape.flash_attention) return d.tokens * d.heads * kFp32Bytes;
  return d.score_elems * d.act_bytes;
}

// The attention block's other saved tensors (GQA).
int64_t gqa_saved(const UnitDims& d) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size, hd = m.head_dim;
  int64_t bytes = d.sp_tokens * h * a;                      // norm input (Korthikanti: LayerNorm 2sbh/t)
  bytes += d.sp_tokens * norm_stat_bytes(m);                // norm statistics
  bytes += d.sp_tokens * h * linear_input_bytes(d);         // QKV input, the norm output, SP shard (2sbh/t)
  bytes += d.tokens * (d.heads + 2 * d.kv_heads) * hd * a;  // Q, K, V (4sbh/t + 2sbh/t, K and V with kv heads)
  if (m.qk_norm) {
    bytes += d.tokens * (d.heads + d.kv_heads) * (hd * a + kFp32Bytes);  // Q, K before their norms + statistics
  }
  bytes += d.tokens * d.heads * hd * (a + fp8_input_copy_bytes(d));  // O, the output projection's input (2sbh/t)
  return bytes;
}

// MLA's saved tensors: the latents before and after their norms, then Q, K, V and O at MLA's head widths.
int64_t mla_saved(const UnitDims& d) {
  const ModelSpec& m = *d.model;
  const MlaSpec& l = m.mla;
  const int64_t a = d.act_bytes, h = m.hidden_size, stat = norm_stat_bytes(m);
  int64_t bytes = d.sp_tokens * (h * a + stat);  // norm input + statistics
  const int64_t in = linear_input_bytes(d);
  bytes += d.sp_tokens * h * in;  // norm output: the down-projections' input
  if (l.q_lora_rank > 0) bytes += d.sp_tokens * (l.q_lora_rank * (a + in) + stat);  // q latent before/after its norm
  bytes += d.sp_tokens * ((l.kv_lora_rank + l.qk_rope_head_dim) * a + stat);        // kv_a output (+ rotary key)
  bytes += d.sp_tokens * l.kv_lora_rank * in;                                       // kv latent after its norm
  bytes += d.tokens * d.heads * (2 * d.qk_head_dim + d.v_head_dim) * a;             // Q, K, V
  bytes += d.tokens * d.heads * d.v_head_dim * (a + fp8_input_copy_bytes(d));       // O
  return bytes;
}

// Dense MLP: norm input and statistics, fc1 input (SP shard), and for SwiGLU the gate and up outputs (the
// activation's inputs) plus the activation output (fc2's input) — Korthikanti's GeLU input 8sbh and fc2 input 8sbh
// at width ffn — or, without gating, the fc1 output and the GeLU output.
int64_t mlp_saved(const UnitDims& d, int64_t rows, int64_t width) {
  return (act_factor(*d.model, 3, 2) - 1) * rows * width * d.act_bytes + rows * width * linear_input_bytes(d);
}

// Norm input + stats + norm output; a MoE block's norm output stays 16-bit, the router's BF16 linear saves it.
int64_t mlp_norm_saved(const UnitDims& d, bool moe) {
  const ModelSpec& m = *d.model;
  const int64_t out = moe ? d.act_bytes : linear_input_bytes(d);
  return d.sp_tokens * (m.hidden_size * (d.act_bytes + out) + norm_stat_bytes(m));
}

// MoE block: router probabilities (fp32), the dispatched tokens (expert fc1 input), expert intermediates for every
// token-expert pair (×top_k), the expert outputs kept for the routing-weight gradient (TE moe_unpermute saves its
// input when probs need grad), and the shared experts' intermediates.
int64_t moe_saved(const UnitDims& d) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size;
  int64_t bytes = d.sp_tokens * m.moe.num_experts * kFp32Bytes;  // router probabilities
  bytes += d.expert_pairs * h * linear_input_bytes(d);           // dispatched tokens
  bytes += mlp_saved(d, d.expert_pairs, d.expert_ffn);           // expert intermediates
  bytes += d.dispatch_tokens * h * a;                            // expert outputs returned for the combine
  if (d.shared_ffn > 0) {  // and the shared experts' own FP8 cast of the norm output
    bytes += mlp_saved(d, d.tokens, d.shared_ffn) + d.sp_tokens * h * fp8_input_copy_bytes(d);
  }
  return bytes;
}

// What PyTorch eager autograd saves beyond the fused kernels (RankShape::fused_elementwise = false): each RMSNorm
// saves its fp32 upcast input (pow and mul need it) and its 16-bit normalised output before the weight product (the
// weight's gradient needs it) instead of the input and a statistic: 4 more bytes per element for each of the two
// norms. SwiGLU's product saves silu(gate) besides gate and up. LayerNorm is one native kernel either way.
int64_t eager_saved_extra(const UnitDims& d, bool moe) {
  if (d.shape.fused_elementwise) return 0;
  const ModelSpec& m = *d.model;
  int64_t bytes = 0;
  if (m.norm == NormKind::rmsnorm) bytes += 2 * d.sp_tokens * m.hidden_size * kFp32Bytes;
  if (m.gated_mlp) {
    if (moe) {
      bytes += d.expert_pairs * d.expert_ffn * d.act_bytes + d.tokens * d.shared_ffn * d.act_bytes;
    } else {
      bytes += d.tokens * d.ffn * d.act_bytes;
    }
  }
  return bytes;
}

void set_layer_saved(const UnitDims& d, bool moe, UnitCost& unit) {
  const int64_t attention = d.model->mla.enabled() ? mla_saved(d) : gqa_saved(d);
  const int64_t core = attention_core_saved(d);
  const int64_t mlp = mlp_norm_saved(d, moe) + (moe ? moe_saved(d) : mlp_saved(d, d.tokens, d.ffn));
  const auto none = static_cast<size_t>(Recompute::none);
  unit.saved_activation_bytes[none] = attention + core + mlp + eager_saved_extra(d, moe);
  unit.saved_activation_bytes[static_cast<size_t>(Recompute::selective)] = attention + mlp;
  // Full recompute checkpoints the layer input only: 2sbh/t (Korthikanti Table 2 with sequence parallelism).
  unit.saved_activation_bytes[static_cast<size_t>(Recompute::full)] = d.sp_tokens * d.model->hidden_size * d.act_bytes;
  unit.saved_activation_bytes[static_cast<size_t>(Recompute::selective_op)] = unit.saved_activation_bytes[none];
  unit.recomputed_activation_bytes = unit.saved_activation_bytes[none];
}

Fp8CastBytes unit_fp8_cast_bytes(const UnitDims& d, const UnitCost& unit) {
  if (d.shape.compute_dtype != DType::fp8) return {};
  return fp8_cast_bytes(d.shape.fp8_casts, unit.fwd_gemms, unit.bwd_gemms, d.act_bytes, d.shape.fused_elementwise,
                        d.shape.fp8_gathered_weights);
}

// Attention-side memory-bound work: rotary embedding on Q and K (read + write), Qwen3's per-head norms, MLA's latent
// norms and Q/K assembly, and the softmax when attention is not fused.
void attention_bytes(const UnitDims& d, int64_t& fwd, int64_t& bwd, KernelClassBytes& fwd_class,
                     KernelClassBytes& bwd_class) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes;
  if (m.mla.enabled()) {
    const MlaSpec& l = m.mla;
    fwd += 2 * d.sp_tokens * (l.q_lora_rank + l.kv_lora_rank) * a;  // latent norms: read + write
    bwd += 3 * d.sp_tokens * (l.q_lora_rank + l.kv_lora_rank) * a;  // read x and dy, write dx
    fwd += 2 * d.tokens * (d.heads + 1) * l.qk_rope_head_dim * a;   // rotary on q_pe (per head) and the shared k_pe
    bwd += 2 * d.tokens * (d.heads + 1) * l.qk_rope_head_dim * a;
    fwd += 4 * d.tokens * d.heads * d.qk_head_dim * a;  // concatenating nope and rope parts into Q and K
    bwd += 4 * d.tokens * d.heads * d.qk_head_dim * a;  // splitting their gradients
  } else {
    const int64_t qk = d.tokens * (d.heads + d.kv_heads) * m.head_dim * a;
    // Rotary on Q and K (Su et al. 2021): a fused kernel reads and writes once. Eager (torchtitan apply_rotary_emb)
    // upcasts to fp32 (read 2, write 4 bytes per element), multiplies as complex64 (read 4, write 4) and casts back
    // (read 4, write 2): 20 bytes per element = 10 × the 2 bytes of qk; its backward runs the same three ops. The
    // upcast and the product by the broadcast frequencies are unvectorized (7 of the 10).
    const int64_t rotary = d.shape.fused_elementwise ? 2 : 10;
    fwd += rotary * qk;
    bwd += rotary * qk;
    if (!d.shape.fused_elementwise) {
      fwd_class.unvectorized += 7 * qk;
      bwd_class.unvectorized += 7 * qk;
    }
    if (m.qk_norm) {
      fwd += 2 * qk;
      bwd += 3 * qk;
    }
  }
  if (!d.shape.flash_attention) {
    fwd += 2 * d.score_elems * a;  // softmax: read scores, write probabilities
    bwd += 3 * d.score_elems * a;  // read P and dP, write dS
  }
}

// MLP-side memory-bound work: the activation function, and for MoE the router softmax/top-k, the permutation of
// tokens into expert order and the weighted combine.
void mlp_bytes(const UnitDims& d, bool moe, int64_t& fwd, int64_t& bwd) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size;
  // SwiGLU reads gate and up and writes the product (backward reads both and dout, writes both grads); GeLU reads
  // and writes one tensor (backward reads input and dout, writes din). Eager SwiGLU is two kernels, silu(gate)
  // (read, write) then × up (read two, write one): 5 tensor passes; its backward is two products and silu_backward,
  // three kernels of three passes each.
  const bool fused = d.shape.fused_elementwise;
  const auto activation = [&](int64_t rows, int64_t width) {
    fwd += act_factor(m, fused ? 3 : 5, 2) * rows * width * a;
    bwd += act_factor(m, fused ? 5 : 9, 3) * rows * width * a;
  };
  if (!moe) {
    activation(d.tokens, d.ffn);
    return;
  }
  const int64_t experts = m.moe.num_experts;
  fwd += d.sp_tokens * experts * (a + 2 * kFp32Bytes);  // logits → fp32 probabilities → top-k
  bwd += d.sp_tokens * experts * (a + 2 * kFp32Bytes);
  fwd += 2 * d.dispatch_tokens * h * a;                  // permute: gather rows into expert order
  fwd += (d.dispatch_tokens + d.sp_tokens) * h * a;      // unpermute: weighted sum back to token order
  bwd += (d.sp_tokens + 2 * d.dispatch_tokens) * h * a;  // unpermute backward (dY, saved outputs → d outputs)
  bwd += 2 * d.dispatch_tokens * h * a;                  // permute backward: scatter-add the gradients
  activation(d.expert_pairs, d.expert_ffn);
  if (d.shared_ffn > 0) activation(d.tokens, d.shared_ffn);
}

// One norm over a T/t × h activation (`block` bytes): a fused kernel reads x and writes y (backward reads x and dy,
// writes dx). An eager RMSNorm (ATen's composite rms_norm, as torch.nn.RMSNorm runs without torch.compile) is six
// kernels over the row: upcast to fp32 (read 2, write 4 bytes per element), pow (4 + 4), mean (4), × rsqrt (4 + 4),
// cast back (4 + 2), × weight (2 + 2) = 36 bytes = 18 block-bytes; autograd's backward through them runs about twice
// that (40 block-bytes: the same kernels' grads plus the accumulation of the two paths into dx). LayerNorm is one
// native kernel even in eager mode. Of the eager forward's 18, the upcast and the two broadcast products (by the
// per-row rsqrt, by the weight) are unvectorized (9) and the mean is a reduction (2); of the backward's 40, the
// products by w and by the rsqrt, dy's upcast and pow's backward are about 17, the sums for dw and for the
// rsqrt's gradient about 3.
struct NormBytes {
  int64_t fwd = 0;
  int64_t bwd = 0;
  KernelClassBytes fwd_class;
  KernelClassBytes bwd_class;
};

NormBytes norm_bytes(const UnitDims& d) {
  const int64_t block = d.sp_tokens * d.model->hidden_size * d.act_bytes;
  if (d.shape.fused_elementwise || d.model->norm == NormKind::layernorm) return {2 * block, 3 * block, {}, {}};
  return {18 * block,
          40 * block,
          {.unvectorized = 9 * block, .reduction = 2 * block},
          {.unvectorized = 17 * block, .reduction = 3 * block}};
}

void set_layer_bytes(const UnitDims& d, bool moe, UnitCost& unit) {
  const int64_t block = d.sp_tokens * d.model->hidden_size * d.act_bytes;  // one T/t × h activation
  // Two norms and two residual adds (read two, write one; backward adds the branch gradient to the skip gradient).
  const NormBytes norm = norm_bytes(d);
  int64_t fwd = 2 * norm.fwd + 2 * 3 * block;
  int64_t bwd = 2 * norm.bwd + 2 * 3 * block;
  KernelClassBytes fwd_class = norm.fwd_class, bwd_class = norm.bwd_class;
  fwd_class += norm.fwd_class;  // the second norm
  bwd_class += norm.bwd_class;
  attention_bytes(d, fwd, bwd, fwd_class, bwd_class);
  mlp_bytes(d, moe, fwd, bwd);
  const Fp8CastBytes casts = unit_fp8_cast_bytes(d, unit);
  unit.fwd_bytes_touched = fwd + casts.fwd;
  unit.bwd_bytes_touched = bwd + casts.bwd;
  unit.fwd_class_bytes = fwd_class;
  unit.bwd_class_bytes = bwd_class;
}

// Workspace of the attention block, estimated as the largest set of unsaved intermediates alive at once.
void attention_workspace(const UnitDims& d, int64_t& fwd, int64_t& bwd) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size, t = d.tokens;
  const bool tp = d.shape.tp > 1, flash = d.shape.flash_attention;
  // What the block all-gathers per token: the hidden state, or MLA's latents.
  int64_t in_width = h;
  if (m.mla.enabled()) {
    in_width = (m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : h) + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
  }
  const int64_t qkv_width = d.heads * d.qk_head_dim + d.kv_heads * (d.qk_head_dim + d.v_head_dim);
  fwd = (tp ? t * in_width * a : 0)              // the gathered input
        + t * h * a                              // the projection output before its reduce-scatter / residual add
        + (flash ? 0 : d.score_elems * a);       // unfused: the raw scores before the softmax
  bwd = (tp ? t * h * a + t * in_width * a : 0)  // the gathered dY and the re-gathered input
        + t * (qkv_width + d.heads * d.v_head_dim) * a       // dQ, dK, dV and dO
        + t * in_width * a                                   // the input gradient before its reduce-scatter
        + (flash ? t * d.heads * d.qk_head_dim * kFp32Bytes  // FlashAttention-2's fp32 dQ accumulator
                 : 2 * d.score_elems * a);                   // unfused: dP and dS
}

void mlp_workspace(const UnitDims& d, bool moe, int64_t& fwd, int64_t& bwd) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size, t = d.tokens;
  const bool tp = d.shape.tp > 1;
  // A TP-split MLP: the gathered input and the output before its reduce-scatter; backward the gathered dY, the
  // re-gathered input, the intermediate gradients and the input gradient.
  const auto dense_mlp = [&](int64_t width) {
    fwd += (tp ? t * h * a : 0) + t * h * a;
    bwd += (tp ? 2 * t * h * a : 0) + act_factor(m, 3, 2) * t * width * a + t * h * a;
  };
  fwd = 0;
  bwd = 0;
  if (!moe) {
    dense_mlp(d.ffn);
    return;
  }
  // All-to-all send (this rank's tokens) and receive (what its experts get: more on the busiest rank of a skewed
  // routing) buffers, and the combined output.
  const int64_t a2a_bytes = (d.dispatch_tokens + d.received_tokens) * h * a;
  fwd += a2a_bytes + d.sp_tokens * h * a;
  bwd += a2a_bytes                                                  // all-to-all buffers
         + act_factor(m, 3, 2) * d.expert_pairs * d.expert_ffn * a  // expert intermediate gradients
         + 2 * d.expert_pairs * h * a;                              // d expert output and d expert input
  if (d.shared_ffn > 0) dense_mlp(d.shared_ffn);
}

// Transient memory while the forward or backward op runs: the larger of the attention and MLP blocks' unsaved
// intermediates alive at once (each term above).
void set_layer_workspace(const UnitDims& d, bool moe, UnitCost& unit) {
  int64_t attn_fwd = 0, attn_bwd = 0, mlp_fwd = 0, mlp_bwd = 0;
  attention_workspace(d, attn_fwd, attn_bwd);
  mlp_workspace(d, moe, mlp_fwd, mlp_bwd);
  unit.fwd_workspace_bytes = std::max(attn_fwd, mlp_fwd);
  unit.bwd_workspace_bytes = std::max(attn_bwd, mlp_bwd);
}

}  // namespace

namespace {

// The forward GEMMs of `unit` whose names start with one of `prefixes`.
std::vector<Gemm> gemms_named(const UnitCost& unit, std::initializer_list<std::string_view> prefixes) {
  std::vector<Gemm> out;
  for (const Gemm& g : unit.fwd_gemms) {
    for (const std::string_view p : prefixes) {
      if (std::string_view(g.name).substr(0, p.size()) == p) {
        out.push_back(g);
        break;
      }
    }
  }
  return out;
}

// Megatron-LM's --recompute-modules (megatron/core/transformer/transformer_config.py recompute_modules,
// transformer_layer.py / multi_latent_attention.py / moe_layer.py checkpointing): what each module's recompute frees
// from the `none` set of saved tensors above, and the forward work it re-runs in backward.
void set_module_recompute(const UnitDims& d, bool moe, UnitCost& unit) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size;
  auto& r = unit.module_recompute;
  const auto at = [&](RecomputeModule module) -> ModuleRecompute& { return r[static_cast<size_t>(module)]; };
  // core_attn: the attention core's own saved tensors; with FlashAttention its backward recomputes the scores anyway.
  at(RecomputeModule::core_attn).freed_bytes = attention_core_saved(d);
  // layernorm (CheckpointWithoutOutput): both norm outputs are dropped and recomputed from the kept inputs.
  // A MoE block's norm output stays 16-bit (the router saves it); the shared experts' FP8 cast of it is theirs.
  at(RecomputeModule::layernorm).freed_bytes =
      d.sp_tokens * h * (linear_input_bytes(d) + (moe ? a : linear_input_bytes(d)));
  at(RecomputeModule::layernorm).bytes_touched = 2 * 2 * d.sp_tokens * h * a;
  if (m.mla.enabled()) {
    // mla_up_proj: Q, K, V from the up-projections and rotary are dropped and re-made from the kept latents.
    ModuleRecompute& up = at(RecomputeModule::mla_up_proj);
    up.freed_bytes = d.tokens * d.heads * (2 * d.qk_head_dim + d.v_head_dim) * a;
    up.gemms = gemms_named(unit, {"q_b", "kv_b"});
    up.bytes_touched =
        2 * d.tokens * (d.heads + 1) * m.mla.qk_rope_head_dim * a + 4 * d.tokens * d.heads * d.qk_head_dim * a;
  }
  int64_t fwd = 0, bwd = 0;
  mlp_bytes(d, moe, fwd, bwd);
  if (!moe) {
    // mlp: the checkpointed MLP keeps its input (the norm output, counted with the norm) and re-runs.
    ModuleRecompute& mlp = at(RecomputeModule::mlp);
    mlp.freed_bytes = mlp_saved(d, d.tokens, d.ffn);
    mlp.gemms = gemms_named(unit, {"mlp_"});
    mlp.bytes_touched = fwd;
    return;
  }
  // moe: the whole MoE block re-runs from its input, router, token dispatch and combine included.
  ModuleRecompute& block = at(RecomputeModule::moe);
  block.freed_bytes = moe_saved(d);
  block.gemms = gemms_named(unit, {"router", "expert_", "shared_"});
  block.bytes_touched = fwd;
  for (const UnitCollective& c : unit.fwd_collectives) {
    if (c.group == GroupRole::ep || c.group == GroupRole::etp) block.collectives.push_back(c.name);
  }
  // moe_act: the routed experts' activation outputs (fc2's input) are dropped and re-made from fc1's outputs.
  ModuleRecompute& act = at(RecomputeModule::moe_act);
  act.freed_bytes = d.expert_pairs * d.expert_ffn * linear_input_bytes(d);
  act.bytes_touched = act_factor(m, 3, 2) * d.expert_pairs * d.expert_ffn * a;
  if (d.shared_ffn > 0) {
    ModuleRecompute& shared = at(RecomputeModule::shared_experts);
    shared.freed_bytes = mlp_saved(d, d.tokens, d.shared_ffn);
    shared.gemms = gemms_named(unit, {"shared_"});
    shared.bytes_touched = act_factor(m, 3, 2) * d.tokens * d.shared_ffn * a;
  }
}

}  // namespace

void add_layer_memory(const UnitDims& d, bool moe, UnitCost& unit) {
  set_layer_saved(d, moe, unit);
  set_layer_bytes(d, moe, unit);
  set_layer_workspace(d, moe, unit);
  set_module_recompute(d, moe, unit);
}

void add_embedding_memory(const UnitDims& d, UnitCost& unit) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size, t = d.tokens;
  const bool learned = m.position_embedding == PositionEmbedding::learned;
  // Backward needs only the token (and position) ids; nothing here is recomputed, so every mode saves the same.
  const int64_t saved = t * kIndexBytes * (learned ? 2 : 1);
  unit.saved_activation_bytes = {saved, saved, saved, saved};
  // Forward gathers T rows (read + write); learned positions read their rows and add them (read two, write one).
  unit.fwd_bytes_touched = 2 * t * h * a + (learned ? 3 * t * h * a : 0);
  // Backward (torch embedding_dense_backward) zero-fills a dense [vocab/tp, h] gradient, then scatter-adds T rows
  // of dY into it (read dY, read-modify-write the row); the same for the position table.
  unit.bwd_bytes_touched = d.vocab_rank * h * a + 3 * t * h * a;
  if (learned) unit.bwd_bytes_touched += m.max_position_embeddings * h * a + 3 * t * h * a;
  // Forward: the partial lookup before the TP reduce-scatter, or the word embeddings before the position add.
  unit.fwd_workspace_bytes = (d.shape.tp > 1 || learned) ? t * h * a : 0;
  // Backward: the gathered dY. The dense weight gradient is autograd's param.grad, which the builders place (a
  // transient before Megatron-FSDP's bucket copy, FSDP2's unsharded gradient) as they do for every unit.
  unit.bwd_workspace_bytes = d.shape.tp > 1 ? t * h * a : 0;
}

namespace {

LossDims loss_dims(const UnitDims& d) {
  return LossDims{d.tokens, d.vocab_rank, d.model->hidden_size, d.act_bytes, d.shape.loss_chunks};
}

}  // namespace

void add_output_memory(const UnitDims& d, UnitCost& unit) {
  const ModelSpec& m = *d.model;
  const int64_t a = d.act_bytes, h = m.hidden_size, t = d.tokens;
  const bool chunked_backward = d.shape.loss_chunked_backward;
  const LossMemory loss = chunked_backward ? chunked_backward_loss_memory(d.shape.loss, loss_dims(d))
                                           : loss_memory(d.shape.loss, loss_dims(d));
  // Final norm input and statistics, its output (the logits GEMM input, SP shard), and the target ids and mask; the
  // loss adds what its implementation keeps (model/loss.cpp). Not recomputed: the same under every mode.
  // The chunked loss's saved gradient has the norm output's shape after the SP all-gather: t tokens, not sp_tokens.
  const int64_t chunked_gradient_extra = chunked_backward ? (t - d.sp_tokens) * h * a : 0;
  const int64_t saved = d.sp_tokens * (2 * h * a + norm_stat_bytes(m)) + t * (kIndexBytes + 1) + loss.saved_bytes +
                        chunked_gradient_extra;
  unit.saved_activation_bytes = {saved, saved, saved, saved};
  const NormBytes norm = norm_bytes(d);  // the final norm
  const Fp8CastBytes casts = unit_fp8_cast_bytes(d, unit);
  unit.fwd_bytes_touched = norm.fwd + loss.fwd_bytes_touched + casts.fwd;
  unit.bwd_bytes_touched = norm.bwd + loss.bwd_bytes_touched + casts.bwd;
  unit.fwd_class_bytes = norm.fwd_class;
  unit.fwd_class_bytes += loss.fwd_class_bytes;
  unit.bwd_class_bytes = norm.bwd_class;
  unit.bwd_class_bytes += loss.bwd_class_bytes;
  // Forward: the gathered input; backward: the re-gathered input and the input gradient before its reduce-scatter.
  const bool tp = d.shape.tp > 1;
  unit.fwd_workspace_bytes = (tp ? t * h * a : 0) + loss.fwd_workspace_bytes;
  unit.bwd_workspace_bytes = (tp ? t * h * a : 0) + t * h * a + loss.bwd_workspace_bytes;
  unit.fwd_transient_tensors = loss.fwd_transient_tensors;
  unit.bwd_transient_tensors = loss.bwd_transient_tensors;
  if (d.shape.train_metric_cross_entropies > 0) {
    // The trainer keeps the model's 16-bit output (Composer's `state.outputs`) until the next forward rebinds it or
    // the step ends; the loss saves that same tensor (flash_attn_xentropy, compiled), so it moves from the loss's
    // saved bytes to the held output. Each metric cross-entropy runs after the micro-batch's backward, one at a time.
    const int64_t logits_bytes = t * d.vocab_rank * a;
    unit.held_output_bytes = logits_bytes;
    for (int64_t& s : unit.saved_activation_bytes) s -= logits_bytes;
    const LossMemory metric = metric_cross_entropy(loss_dims(d));
    const int32_t passes = d.shape.train_metric_cross_entropies;
    unit.metric_transient_tensors = metric.fwd_transient_tensors;
    unit.metric_bytes_touched = passes * metric.fwd_bytes_touched;
    unit.metric_class_bytes = {.unvectorized = passes * metric.fwd_class_bytes.unvectorized,
                               .reduction = passes * metric.fwd_class_bytes.reduction};
    // Per metric: the upcast, log_softmax, nll_loss, the ignored-label mask, its sum and the running-sum update.
    unit.metric_kernels = 6 * passes;
  }
  if (d.shape.loop_holds_logits) {
    const int64_t logits = t * d.vocab_rank;
    if (d.shape.loss == LossImpl::eager_fp32) {
      // The model's output is its fp32 upcast (torchtitan's Transformer.forward ends in `self.output(h).float()`),
      // the forward's transient fp32 copy: the loop's reference keeps that tensor rather than a new one.
      unit.held_output_bytes = logits * 4;
      unit.fwd_transient_tensors.clear();
    } else {
      // LossImpl::chunked: the model returns its 16-bit logit chunks (torchtune's output projection per chunk), the
      // forward's 16-bit workspace: held instead of freed with the op.
      unit.held_output_bytes = logits * a;
      unit.fwd_workspace_bytes -= logits * a;
    }
  }
}

}  // namespace fsdpsim
