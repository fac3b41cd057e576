#pragma once
/// The kernels that cast a linear layer's GEMM operands to FP8, as HBM bytes in forward and backward.
///
/// Transformer Engine (Megatron-FSDP, llm-foundry) casts each linear input in forward and each output gradient in
/// backward once, and fuses some of those casts into the norm and activation kernels. torchao's float8 training
/// (FSDP2, torchtitan) runs its own cast kernels around every linear, and how many depends on the recipe: dynamic
/// scaling needs an amax of each tensor before it can cast it, and rowwise scaling casts each operand twice, once
/// along each axis, because the weight gradient contracts over the axis the forward scaled along.

#include <cstdint>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// Whose kernels cast the GEMM operands to FP8, and under which recipe.
enum class Fp8Casts : uint8_t {
  transformer_engine,  ///< one cast per forward input and per output gradient (an upper bound: TE fuses some)
  torchao_tensorwise,
  torchao_rowwise,
  torchao_rowwise_with_gw_hp,
  torchao_mxfp8,
};

struct Fp8CastBytes {
  int64_t fwd = 0;
  int64_t bwd = 0;
};

/// What the cast kernels of one linear layer's three GEMMs touch, for an input of `input_elems` (tokens × in),
/// a weight of `weight_elems` (out × in) and an output gradient of `grad_output_elems` (tokens × out), BF16 in and
/// FP8 out. `fused_with_producer`: torch.compile folds the first read of the input and of the output gradient into
/// the kernel that produced them. `fp8_gathered_weight`: FSDP's float8 all-gather hands the layer an FP8 weight (cast
/// on the 1/dp shard before the all-gather, not counted), which backward only transposes.
///
/// torchao's kernels, bytes per element (torchao/testing/training/roofline_utils.py @ 0598012907d6,
/// get_tensor_memory_traffic_ovhd_s; "fused" is its enable_fusion_modeling):
///   tensorwise  input, grad_output: amax (2, fused 0), cast to both layouts (2 + 1 + 1)
///               weight: amax (2), forward cast (3), backward cast (3)
///   rowwise     input, grad_output: dim-0 cast writing a BF16 transpose (2 + 1 + 2, fused 1 + 2), dim-1 cast (3)
///               weight: dim-0 cast (3), BF16 transpose (4), dim-1 cast (3)
///   rowwise_with_gw_hp  input, grad_output: one cast (3, fused 1); weight: forward cast (3), backward cast (3)
///   mxfp8       each of the three: dim-0 cast (3, fused 1 for input and grad_output), dim-1 cast (3)
/// Forward runs the input's first kernel and the weight's forward kernels; backward the rest.
Fp8CastBytes torchao_cast_bytes(Fp8Casts casts, int64_t input_elems, int64_t weight_elems, int64_t grad_output_elems,
                                bool fused_with_producer, bool fp8_gathered_weight);

/// The cast bytes of a unit's FP8 linear layers (attention products and Gemm::bf16_in_fp8 ones excluded). Under
/// `transformer_engine`, `activation_bytes` per element are read and 1 written for the input of each forward GEMM and
/// the output gradient of each input-gradient (".dgrad") GEMM of `backward_gemms`; under torchao's recipes,
/// torchao_cast_bytes of the layer of each forward GEMM (a batch of routed experts counts each expert's layer).
Fp8CastBytes fp8_cast_bytes(Fp8Casts casts, const std::vector<Gemm>& forward_gemms,
                            const std::vector<Gemm>& backward_gemms, int64_t activation_bytes, bool fused_with_producer,
                            bool fp8_gathered_weight);

}  // namespace fsdpsim
