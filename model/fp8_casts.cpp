#include "model/fp8_casts.h"

namespace fsdpsim {
namespace {

constexpr int64_t kBf16 = 2;
constexpr int64_t kFp8 = 1;

// One input or output-gradient tensor of `n` elements: bytes of its forward-side first kernel and of the rest.
struct ActivationCast {
  int64_t first = 0;
  int64_t rest = 0;
};

ActivationCast activation_cast(Fp8Casts casts, int64_t n, bool fused) {
  const int64_t read = fused ? 0 : kBf16 * n;  // the first read, folded into the producer when fused
  switch (casts) {
    case Fp8Casts::torchao_tensorwise:
      // amax's read, then one kernel reading BF16 and writing both FP8 layouts (the amax's second stage is tiny).
      return {read + kBf16 * n + 2 * kFp8 * n, 0};
    case Fp8Casts::torchao_rowwise:
      return {read + kFp8 * n + kBf16 * n, kBf16 * n + kFp8 * n};
    case Fp8Casts::torchao_rowwise_with_gw_hp:
      return {read + kFp8 * n, 0};
    case Fp8Casts::torchao_mxfp8:
      return {read + kFp8 * n, kBf16 * n + kFp8 * n};
    case Fp8Casts::transformer_engine:
      break;
  }
  return {};
}

// The weight's forward and backward kernels (never fused: its producer is the all-gather).
Fp8CastBytes weight_cast(Fp8Casts casts, int64_t n, bool fp8_gathered) {
  if (fp8_gathered) return {0, 2 * kFp8 * n};  // already FP8: backward transposes it
  const int64_t cast = kBf16 * n + kFp8 * n;
  switch (casts) {
    case Fp8Casts::torchao_tensorwise:
      return {kBf16 * n + cast, cast};  // amax and the forward cast; the backward cast
    case Fp8Casts::torchao_rowwise:
      return {cast, 2 * kBf16 * n + cast};  // dim-0 cast; BF16 transpose and dim-1 cast
    case Fp8Casts::torchao_rowwise_with_gw_hp:
    case Fp8Casts::torchao_mxfp8:
      return {cast, cast};  // a forward cast; a backward cast
    case Fp8Casts::transformer_engine:
      break;
  }
  return {};
}

}  // namespace

Fp8CastBytes torchao_cast_bytes(Fp8Casts casts, int64_t input_elems, int64_t weight_elems, int64_t grad_output_elems,
                                bool fused_with_producer, bool fp8_gathered_weight) {
  if (casts == Fp8Casts::transformer_engine) return {};
  const ActivationCast input = activation_cast(casts, input_elems, fused_with_producer);
  const ActivationCast grad_output = activation_cast(casts, grad_output_elems, fused_with_producer);
  const Fp8CastBytes weight = weight_cast(casts, weight_elems, fp8_gathered_weight);
  return {input.first + weight.fwd, input.rest + grad_output.first + grad_output.rest + weight.bwd};
}

Fp8CastBytes fp8_cast_bytes(Fp8Casts casts, const std::vector<Gemm>& forward_gemms,
                            const std::vector<Gemm>& backward_gemms, int64_t activation_bytes, bool fused_with_producer,
                            bool fp8_gathered_weight) {
  Fp8CastBytes total;
  if (casts == Fp8Casts::transformer_engine) {
    for (const Gemm& g : forward_gemms) {
      if (!g.attention && !g.bf16_in_fp8) total.fwd += g.m * g.k * g.batch * (activation_bytes + kFp8);  // input X
    }
    for (const Gemm& g : backward_gemms) {
      if (!g.attention && !g.bf16_in_fp8 && g.name.ends_with(".dgrad")) {
        total.bwd += g.m * g.k * g.batch * (activation_bytes + kFp8);
      }
    }
    return total;
  }
  for (const Gemm& g : forward_gemms) {
    if (g.attention || g.bf16_in_fp8) continue;
    // A linear layer's forward GEMM: m tokens, n output features, k input features (model/model_units.h).
    const Fp8CastBytes one = torchao_cast_bytes(casts, g.m * g.k * g.batch, g.n * g.k * g.batch, g.m * g.n * g.batch,
                                                fused_with_producer, fp8_gathered_weight);
    total.fwd += one.fwd;
    total.bwd += one.bwd;
  }
  return total;
}

}  // namespace fsdpsim
