// How many kernels each unit launches per micro-batch: what its host-side issue costs (sim/host_timeline.h). A
// small model's step is bound by the CPU that launches its kernels, not by the GPU that runs them
// (bench/results/2026-11-27-kernels: eager PyTorch spends 2.4-3.8 ms of CPU per Llama layer per step whatever its
// width), so the count matters where the bytes and FLOPs do not.
//
// The counts follow the same choices as the bytes in model_units_memory.cpp, kernel by kernel:
// - A GEMM is one kernel; Q, K, V and gate/up are one fused GEMM each under Megatron-Core and separate matmuls in
//   torchtitan's and Hugging Face's modules (RankShape::separate_projections). A routed experts' GEMM entry is one
//   grouped GEMM.
// - Fused attention is one forward kernel and three backward (FlashAttention-2's dot(dO, O) pre-pass, the main
//   kernel and the dQ conversion, flash_bwd_launch_template.h; cuDNN's backward likewise runs a pre-pass); unfused
//   attention runs its two batched GEMMs each way plus the softmax.
// - Eager RMSNorm (ATen's composite rms_norm) is eight forward kernels: the fp32 upcast, pow, mean, + eps, rsqrt,
//   the product, the downcast and × weight; autograd runs fourteen backward (two for each product, the reductions
//   for the rsqrt and the weight gradients, the casts and the sum of the two paths into dx). A fused norm
//   (Transformer Engine, Apex, Inductor) is one forward and two backward (the input gradient and the weight
//   gradient's finishing reduction); LayerNorm is ATen's native kernel even in eager mode.
// - Eager rotary (torchtitan's apply_rotary_emb) upcasts, multiplies as complex and casts back, for Q and for K:
//   six kernels each way; fused, one per tensor. Eager attention transposes its output to contiguous (one kernel
//   each way). Eager SwiGLU is silu and the product (three backward kernels); a fused one is one each way.
// - A residual add is one kernel each way.
// - MoE routing: the router's softmax, top-k, the probabilities' normalisation, the permutation into expert order
//   and its inverse, and the combine; eleven kernels each way eager, five fused (Megatron-Core's fused router and
//   permute).
// - FP8 casts per FP8 linear: Transformer Engine one fused cast(-transpose) per input and per weight forward and per
//   output gradient backward; torchao in eager mode amax, scale and cast per tensor (three kernels) for the input and
//   the weight forward and the output gradient and the weight's transposed cast backward; compiled, one per tensor.
// These are counts, not measurements of each module: what calibrates them is the CPU time per kernel
// (GpuProfile::host_*), measured as a whole step's slope over depth.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "model/model_units_internal.h"

namespace fsdpsim {
namespace {

// Matmul kernels of one GEMM entry: a fused projection splits into the modules' separate matmuls.
int32_t matmul_kernels(const Gemm& g, bool separate) {
  if (!separate) return 1;
  const std::string_view base = std::string_view(g.name).substr(0, g.name.find('.'));
  if (base == "qkv") return 3;
  if (base.ends_with("_gate_up")) return 2;
  return 1;
}

int32_t gemm_kernels(const UnitDims& d, const std::vector<Gemm>& gemms, bool backward) {
  int32_t kernels = 0;
  bool attention = false;
  for (const Gemm& g : gemms) {
    if (g.attention) {
      attention = true;
      if (!d.shape.flash_attention) ++kernels;
      continue;
    }
    kernels += matmul_kernels(g, d.shape.separate_projections);
  }
  if (attention && d.shape.flash_attention) kernels += backward ? 3 : 1;
  return kernels;
}

// FP8 linears among `gemms` (attention products and the BF16 output layer are not cast).
int32_t fp8_linears(const UnitDims& d, const std::vector<Gemm>& gemms) {
  if (d.shape.compute_dtype != DType::fp8) return 0;
  int32_t n = 0;
  for (const Gemm& g : gemms) {
    if (!g.attention && !g.bf16_in_fp8) n += matmul_kernels(g, d.shape.separate_projections);
  }
  return n;
}

struct Counts {
  int32_t fwd = 0;
  int32_t bwd = 0;
};

// Cast kernels per FP8 linear, forward and backward.
Counts fp8_cast_kernels(const UnitDims& d) {
  if (d.shape.fp8_casts == Fp8Casts::transformer_engine) return {2, 1};
  const int32_t per_tensor = d.shape.fused_elementwise ? 1 : 3;
  return {2 * per_tensor, 2 * per_tensor};
}

Counts norm_kernels(const UnitDims& d) {
  if (d.shape.fused_elementwise) return {1, 2};
  if (d.model->norm == NormKind::layernorm) return {1, 2};
  return {8, 14};
}

Counts add(Counts a, Counts b, int32_t times = 1) {
  return {a.fwd + times * b.fwd, a.bwd + times * b.bwd};
}

Counts layer_elementwise(const UnitDims& d, bool moe) {
  const ModelSpec& m = *d.model;
  const bool eager = !d.shape.fused_elementwise;
  const Counts norm = norm_kernels(d);
  Counts c = add({2, 2}, norm, 2);  // two residual adds, two norms
  if (m.mla.enabled()) {
    c = add(c, norm, 2);                              // the latent norms
    c = add(c, eager ? Counts{6, 6} : Counts{2, 2});  // rotary on q_pe and k_pe
    c = add(c, {2, 2});                               // assembling Q and K from their parts
  } else {
    c = add(c, eager ? Counts{6, 6} : Counts{2, 2});  // rotary on Q and K
    if (m.qk_norm) c = add(c, norm, 2);
  }
  if (eager) c = add(c, {1, 1});  // the attention output made contiguous
  if (!d.shape.flash_attention) c = add(c, eager ? Counts{3, 3} : Counts{1, 1});  // scale, mask, softmax
  const bool gated = m.gated_mlp;
  const Counts activation = eager && gated ? Counts{2, 3} : Counts{1, 1};
  if (!moe) return add(c, activation);
  c = add(c, eager ? Counts{11, 11} : Counts{5, 5});  // routing, permutation, combine
  c = add(c, activation);                             // the routed experts (grouped)
  if (d.shared_ffn > 0) c = add(c, activation);
  return c;
}

void set_counts(const UnitDims& d, Counts elementwise, UnitCost& unit) {
  const Counts cast = fp8_cast_kernels(d);
  const int32_t fp8 = fp8_linears(d, unit.fwd_gemms);
  unit.fwd_elementwise_kernels = elementwise.fwd + fp8 * cast.fwd;
  unit.fwd_kernels = gemm_kernels(d, unit.fwd_gemms, false) + unit.fwd_elementwise_kernels;
  unit.bwd_kernels = gemm_kernels(d, unit.bwd_gemms, true) + elementwise.bwd + fp8 * cast.bwd;
}

// The share of the forward's elementwise kernels that `bytes` of its memory-bound work stand for.
int32_t elementwise_share(const UnitCost& unit, int64_t bytes) {
  if (bytes <= 0 || unit.fwd_bytes_touched <= 0) return 0;
  const double share = static_cast<double>(bytes) / static_cast<double>(unit.fwd_bytes_touched);
  return std::max(1, static_cast<int32_t>(std::lround(share * unit.fwd_elementwise_kernels)));
}

Counts inner_loss_kernels(const UnitDims& d) {
  switch (d.shape.loss) {
    case LossImpl::eager_fp32:  // upcast, log_softmax, nll_loss; nll_loss's zeroed gradient, its backward, the cast
      return {3, 4};
    case LossImpl::chunked:  // the eager loss per chunk
      return {3 * d.shape.loss_chunks, 4 * d.shape.loss_chunks};
    case LossImpl::megatron_vocab_parallel:  // max, subtract, exp, sum, the target's masked gather, log
      return {9, 4};
    case LossImpl::te_fused:
      return {1, 1};
    case LossImpl::flash_attn_xentropy:  // the xentropy kernel, the ignored-label mask and fill, two sums and the
      return {6, 5};                     // mean; backward: the mean's gradient, its copy, the mask and fill, the kernel
    case LossImpl::compiled:
    case LossImpl::liger_fused_linear:
    case LossImpl::cut_cross_entropy:
    case LossImpl::auto_select:
      return {2, 2};
  }
  return {2, 2};
}

Counts loss_kernels(const UnitDims& d) {
  if (d.shape.loss_chunked_backward) {
    // torchtitan's ChunkedLossWrapper: per chunk the loss's forward and backward kernels and the copy into the fp32
    // accumulator, all in the forward; then the cast to 16 bits. Backward hands the saved gradient on.
    const Counts inner = inner_loss_kernels(d);
    return {d.shape.loss_chunks * (inner.fwd + inner.bwd + 1) + 1, 0};
  }
  return inner_loss_kernels(d);
}

}  // namespace

void add_layer_kernels(const UnitDims& d, bool moe, UnitCost& unit) {
  set_counts(d, layer_elementwise(d, moe), unit);
  for (ModuleRecompute& r : unit.module_recompute) {
    r.kernels = gemm_kernels(d, r.gemms, false) + elementwise_share(unit, r.bytes_touched);
  }
  unit.op_sac_recompute_kernels =
      gemm_kernels(d, unit.op_sac_recompute_gemms, false) + elementwise_share(unit, unit.op_sac_recompute_bytes);
}

void add_mtp_kernels(const UnitDims& d, UnitCost& unit) {
  set_counts(d, add(layer_elementwise(d, unit.moe), norm_kernels(d), 2), unit);  // + enorm and hnorm
}

void add_embedding_kernels(const UnitDims& d, UnitCost& unit) {
  // The lookup; with a vocabulary split over TP, the out-of-range mask, the shifted ids and the zeroed rows (eager
  // PyTorch or Megatron's VocabParallelEmbedding alike). Backward: embedding_dense_backward's sort, count and
  // accumulation.
  const int32_t masking = d.shape.tp > 1 ? 4 : 0;
  unit.fwd_elementwise_kernels = 1 + masking;
  unit.fwd_kernels = unit.fwd_elementwise_kernels;
  unit.bwd_kernels = 3;
}

void add_output_kernels(const UnitDims& d, UnitCost& unit) {
  const Counts elementwise = add(norm_kernels(d), loss_kernels(d));
  set_counts(d, elementwise, unit);
}

}  // namespace fsdpsim
