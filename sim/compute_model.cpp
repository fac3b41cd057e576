#include "sim/compute_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "common/error.h"
#include "common/int_math.h"
#include "topologies/attention_table.h"
#include "topologies/gemm_table.h"

namespace fsdpsim {
namespace {

// The profile's maximum efficiency is the best-shape measurement (MAMF, ml-engineering: reached at large k such as
// 8192); the k-loop factor k/(k + k_half) is normalised so that k = 8192 gives 1.
constexpr double kReferenceK = 8192.0;
// A floor on the product of the three efficiencies, so that a degenerate GEMM (a 1-wide tile of a tiny k) still
// takes a finite time instead of an unbounded one; the shapes of transformer layers are far above it.
constexpr double kMinGemmEfficiency = 0.01;

// One product of the attention core (model/model_units_gemms.cpp, attention_core) read back as the call it
// belongs to: the queries q and keys kv of the product's rows and columns, the head dim, and the direction. The
// builder writes q·kv as the causal pair count of one sequence, q = s/(2cp) rows of s + 1 keys (or s rows of
// (s + 1)/2 keys for an odd s), so the sequence is kv − 1 when kv > q, else q.
struct AttentionCall {
  bool backward = false;
  bool first_product = false;  ///< the call's one kernel launch is booked on this product
  int64_t seq = 0;
  int64_t head_dim = 0;
};

std::optional<AttentionCall> attention_call_of(const Gemm& g) {
  int64_t q = 0, kv = 0, d = 0;
  AttentionCall call;
  if (g.name == "attn_scores" || g.name == "attn_scores.recompute" || g.name == "attn_dp") {
    q = g.m, kv = g.n, d = g.k;  // S = Q·Kᵀ, dP = dO·Vᵀ
  } else if (g.name == "attn_values" || g.name == "attn_dq") {
    q = g.m, kv = g.k, d = g.n;  // O = P·V, dQ = dS·K
  } else if (g.name == "attn_dv" || g.name == "attn_dk") {
    q = g.k, kv = g.m, d = g.n;  // dV = Pᵀ·dO, dK = dSᵀ·Q
  } else {
    return std::nullopt;
  }
  call.backward = g.name != "attn_scores" && g.name != "attn_values";
  call.first_product = g.name == "attn_scores" || g.name == "attn_scores.recompute";
  call.seq = kv > q ? kv - 1 : q;
  call.head_dim = d;
  if (call.seq <= 0 || d <= 0) return std::nullopt;
  return call;
}

// GEMM libraries pick a tile per shape (cuBLAS's and CUTLASS's heuristics, hipBLASLt's solution tables): where the
// profile's tile would leave a last wave of output tiles mostly idle, a smaller tile fills the SMs, at a lower
// efficiency per tile, since each operand element it loads feeds fewer outputs. Candidates: sides of 64, 128 and 256
// and the profile's own, with an area no larger than the profile's tile; one of a fraction f of that area runs at
// f^kSmallTileExponent of the profile tile's efficiency. The exponent is fitted on four measured GEMM tables at once
// (our H100 and H200 tables, OpenXLA's B200 and MI300X: the mean over the GPUs of the median |log| error of each
// shape's time, 0.16 its minimum, flat within 0.005 from 0.10 to 0.18), which it brings from 8.8%, 9.9%, 72% and
// 140% to 7.8%, 8.6%, 4.6% and 20% with the profiles' fixed tiles otherwise unchanged (docs/fidelity.md, "GEMM tiles").
constexpr double kSmallTileExponent = 0.16;

// Wave quantisation: output tiles are spread over the SMs, and a last partial wave leaves SMs idle; the best of the
// candidate tiles, each at its own efficiency.
double tile_wave_efficiency(const Gemm& gemm, const GpuProfile& gpu) {
  const int64_t m = std::max<int64_t>(1, gemm.m), n = std::max<int64_t>(1, gemm.n);
  const int64_t batch = std::max<int64_t>(1, gemm.batch);
  const int64_t sms = std::max(1, gpu.sm_count);
  const int64_t area = std::max<int64_t>(1, gpu.gemm_tile_m) * std::max<int64_t>(1, gpu.gemm_tile_n);
  const std::array<int64_t, 5> sides{gpu.gemm_tile_m, gpu.gemm_tile_n, 64, 128, 256};
  double best = 0;
  for (const int64_t tile_m : sides) {
    for (const int64_t tile_n : sides) {
      if (tile_m <= 0 || tile_n <= 0 || tile_m * tile_n > area) continue;
      const int64_t tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n) * batch;
      const double filled = static_cast<double>(tiles) / static_cast<double>(ceil_div(tiles, sms) * sms);
      if (filled <= best) continue;  // the tile's own factor is at most 1
      const double own =
          tile_m * tile_n == area
              ? 1.0
              : std::pow(static_cast<double>(tile_m * tile_n) / static_cast<double>(area), kSmallTileExponent);
      best = std::max(best, filled * own);
    }
  }
  return best;
}

// A measured table's time for one GEMM larger than the table's largest size on some axis. `time_s` gives the
// shape's FLOPs at the edge's rate; the efficiency model carries that rate on by its gain from the edge (the shape
// clamped to the grid) to the shape: a B200's 4096³ GEMM is 256 output tiles of 256 × 256 over 148 SMs, two waves
// with the second 73% full, where an 8192 × 14336 one fills 13 waves to 93%. The gain never lifts the rate past the
// profile's best-shape rate (MAMF), which a large gain over a poorly filled edge would overshoot; a gain below one
// (the shape ends on a worse partial wave than the edge) is kept.
double beyond_grid_time_s(double table_s, const Gemm& gemm, const GemmGrid& grid, const GpuProfile& gpu, DType dtype) {
  Gemm single = gemm;
  single.batch = 1;
  Gemm edge = single;
  edge.m = std::min(gemm.m, grid.m.back());
  edge.n = std::min(gemm.n, grid.n.back());
  edge.k = std::min(gemm.k, grid.k.back());
  if (edge.m == gemm.m && edge.n == gemm.n && edge.k == gemm.k) return table_s;
  const double gain = gemm_efficiency(single, gpu, dtype) / gemm_efficiency(edge, gpu, dtype);
  const double flops = 2.0 * static_cast<double>(gemm.m) * static_cast<double>(gemm.n) * static_cast<double>(gemm.k);
  const double edge_rate = flops / table_s;
  const double best_rate =
      peak_flops_per_s(gpu, dtype) * (dtype == DType::fp8 ? gpu.fp8_gemm_max_efficiency : gpu.gemm_max_efficiency);
  return flops / std::min(edge_rate * gain, std::max(edge_rate, best_rate));
}

}  // namespace

double peak_flops_per_s(const GpuProfile& gpu, DType dtype) {
  if (dtype == DType::fp8) {
    if (gpu.dense_fp8_flops_per_s <= 0) {
      throw ConfigError(SourceLocation{"<profile " + gpu.name + ">", 0, 0}, "dense_fp8_flops_per_s",
                        "the schedule computes in FP8 but " + gpu.name + " has no FP8 tensor cores",
                        "use param_dtype: bf16 and fp8_compute: false, or a Hopper/Blackwell topology");
    }
    return gpu.dense_fp8_flops_per_s;
  }
  return gpu.dense_bf16_flops_per_s;
}

double gemm_efficiency(const Gemm& gemm, const GpuProfile& gpu, DType dtype) {
  if (gemm.attention) return gpu.attention_efficiency;
  const double max_eff = dtype == DType::fp8 ? gpu.fp8_gemm_max_efficiency : gpu.gemm_max_efficiency;
  const double wave_eff = tile_wave_efficiency(gemm, gpu);
  // A short k-loop cannot hide the prologue and epilogue of each tile.
  const auto k = static_cast<double>(std::max<int64_t>(1, gemm.k));
  const auto k_half = static_cast<double>(std::max<int64_t>(1, gpu.gemm_k_half));
  const double k_eff = std::min(1.0, (k / (k + k_half)) / (kReferenceK / (kReferenceK + k_half)));
  return std::max(kMinGemmEfficiency, max_eff * wave_eff * k_eff);
}

double attention_kernel_slowdown(AttentionKernel kernel, bool backward, GpuArch arch) {
  switch (kernel) {
    case AttentionKernel::flash:
      return 1.0;
    case AttentionKernel::triton_flash:
      // FlashAttention-2 "is around 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x
      // faster in the backward pass" (Dao 2023, arXiv 2307.08691, §4.1, A100): the middle of the forward range.
      return backward ? 2.0 : 1.4;
    case AttentionKernel::flash_attn2:
      // NVIDIA's published cudnn-frontend benchmarks time cuDNN's fused attention and PyTorch's FlashAttention-2
      // backend on the same GPU (bench/kernel_tables/published/), causal, head dim 128, sequence 8,192: on an H200
      // (cuDNN 9.1, batch 2 x 16 heads) cuDNN runs the forward in 959.66 µs against 1,690.84 and the backward in
      // 2,964.98 against 4,953.77; on a B200 (cuDNN 9.13, batch 1 x 128 heads) in 1,877.46 against 5,889.32 and
      // 5,832.90 against 18,394.66 (AttentionKernel.FlashAttention2sSharesAreThePublishedTablesOwn). On Ampere and
      // AMD GPUs FlashAttention-2 is the kernel the profile's efficiency stands for.
      switch (arch) {
        case GpuArch::hopper:
          return backward ? 4953.77 / 2964.98 : 1690.84 / 959.66;
        case GpuArch::blackwell:
          return backward ? 18394.66 / 5832.90 : 5889.32 / 1877.46;
        case GpuArch::ampere:
        case GpuArch::cdna3:
        case GpuArch::cdna4:
          return 1.0;
      }
      return 1.0;
  }
  return 1.0;
}

TimeNs gemm_time_ns(const Gemm& gemm, const GpuProfile& gpu, DType dtype, AttentionKernel kernel,
                    Fp8GemmScaling scaling, int64_t query_heads_per_kv_head) {
  const double flops = 2.0 * static_cast<double>(gemm.m) * static_cast<double>(gemm.n) * static_cast<double>(gemm.k) *
                       static_cast<double>(gemm.batch);
  if (flops <= 0) return 0;
  const GemmRole role = gemm_role_of(gemm.name);
  // Fused attention runs in BF16 even in FP8 training (Transformer Engine's default DPA); so do a linear the recipe
  // leaves out (the output layer) and the weight gradient under rowwise_with_gw_hp.
  const bool bf16 = gemm.attention || gemm.bf16_in_fp8 || dtype != DType::fp8 ||
                    (scaling == Fp8GemmScaling::rowwise_with_gw_hp && role == GemmRole::wgrad);
  const DType effective = bf16 ? DType::bf16 : DType::fp8;
  const bool rowwise = !bf16 && scaling != Fp8GemmScaling::tensorwise;
  const std::optional<AttentionCall> call = gemm.attention ? attention_call_of(gemm) : std::nullopt;
  const bool backward = call && call->backward;
  double slowdown = gemm.attention ? attention_kernel_slowdown(kernel, backward, gpu.arch) : 1.0;
  if (gpu.attention_table != nullptr && call) {
    // A table's rows are the kernel that runs (--attention-kernel chooses them): FlashAttention-2 takes no share of
    // another kernel's rate there; the Triton kernel, which no table measures, keeps its ratio to the table's.
    if (kernel == AttentionKernel::flash_attn2) slowdown = 1.0;
    const double rate = gpu.attention_table->flops_per_s(call->backward, call->seq, gemm.batch, call->head_dim,
                                                         query_heads_per_kv_head);
    return ns_from_seconds(flops * slowdown / rate) + (call->first_product ? gpu.kernel_overhead_ns : 0);
  }
  if (gpu.gemm_table != nullptr && !gemm.attention) {
    const auto batch = static_cast<double>(std::max<int64_t>(1, gemm.batch));
    const auto from_table = [&](GemmPrecision precision) -> std::optional<double> {
      const GemmGrid* grid = gpu.gemm_table->grid_for(role, precision);
      if (grid == nullptr) return std::nullopt;
      const std::optional<double> one = gpu.gemm_table->time_s(role, precision, gemm.m, gemm.n, gemm.k);
      if (!one) return std::nullopt;
      return beyond_grid_time_s(*one, gemm, *grid, gpu, effective) * batch;
    };
    if (rowwise) {
      if (const std::optional<double> seconds = from_table(GemmPrecision::fp8_rowwise)) {
        return ns_from_seconds(*seconds) + gpu.kernel_overhead_ns;
      }
    }
    if (const std::optional<double> seconds = from_table(bf16 ? GemmPrecision::bf16 : GemmPrecision::fp8)) {
      const double fraction = rowwise ? gpu.fp8_rowwise_gemm_rate_fraction : 1.0;
      return ns_from_seconds(*seconds / fraction) + gpu.kernel_overhead_ns;
    }
  }
  const double rate = peak_flops_per_s(gpu, effective) * gemm_efficiency(gemm, gpu, effective) *
                      gpu.sustained_clock_fraction * (rowwise ? gpu.fp8_rowwise_gemm_rate_fraction : 1.0);
  const double seconds = flops * slowdown / rate;
  return ns_from_seconds(seconds) + gpu.kernel_overhead_ns;  // saturates for absurd rates: op_costs refuses those
}

TimeNs memory_time_ns(int64_t bytes, const GpuProfile& gpu, KernelClassBytes class_bytes) {
  if (bytes <= 0) return 0;
  FSDPSIM_CHECK(class_bytes.unvectorized >= 0 && class_bytes.reduction >= 0 && class_bytes.total() <= bytes,
                "memory_time_ns: the classified bytes are not a part of the op's bytes");
  const auto at = [&](int64_t part, double efficiency) {
    return static_cast<double>(part) / (gpu.hbm_bw_bytes_per_s * efficiency);
  };
  const double seconds = at(bytes - class_bytes.total(), gpu.memory_efficiency) +
                         at(class_bytes.unvectorized, unvectorized_memory_efficiency(gpu)) +
                         at(class_bytes.reduction, reduction_memory_efficiency(gpu));
  return ns_from_seconds(seconds) + gpu.kernel_overhead_ns;
}

TimeNs compute_time_ns(const Op& op, const GpuProfile& gpu, DType dtype, AttentionKernel kernel, Fp8GemmScaling scaling,
                       int64_t query_heads_per_kv_head) {
  TimeNs total = 0;
  for (const auto& g : op.gemms) total += gemm_time_ns(g, gpu, dtype, kernel, scaling, query_heads_per_kv_head);
  return total + memory_time_ns(op.bytes_touched, gpu, op.class_bytes);
}

}  // namespace fsdpsim
