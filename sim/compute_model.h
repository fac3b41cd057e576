#pragma once
/// How long compute and memory-bound work takes on one GPU when it runs alone: GEMMs at the profile's peak times an
/// efficiency that falls for small shapes (wave quantisation over the SMs and a short k-loop), fused attention at
/// its own efficiency, and memory-bound work (norms, casts, the optimizer) from bytes touched and HBM bandwidth.

#include "common/units.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// Fraction of peak a GEMM of this shape reaches: max efficiency × wave efficiency × k-loop efficiency.
double gemm_efficiency(const Gemm& gemm, const GpuProfile& gpu, DType dtype);
/// Time of one GEMM (or batch), including one kernel's launch overhead. An attention product runs on `kernel`; an
/// FP8 linear GEMM is scaled as `scaling` says (rowwise ones run at the profile's fp8_rowwise_gemm_rate_fraction of
/// the per-tensor rate, or at their own rate in a measured table; rowwise_with_gw_hp's weight gradient runs in BF16).
/// A measured attention table takes an attention product's rate at the call's `query_heads_per_kv_head`.
TimeNs gemm_time_ns(const Gemm& gemm, const GpuProfile& gpu, DType dtype,
                    AttentionKernel kernel = AttentionKernel::flash,
                    Fp8GemmScaling scaling = Fp8GemmScaling::tensorwise, int64_t query_heads_per_kv_head = 1);
/// How many times as long `kernel` takes on a GPU of `arch` as the profile's fused attention (its best kernel) for one
/// call, forward or backward.
double attention_kernel_slowdown(AttentionKernel kernel, bool backward, GpuArch arch);
/// Time of memory-bound work touching `bytes` of HBM, including one kernel's overhead (0 bytes → 0). `class_bytes`,
/// a part of `bytes`, run at the profile's unvectorized and reduction fractions of HBM bandwidth, the rest at
/// `memory_efficiency`.
TimeNs memory_time_ns(int64_t bytes, const GpuProfile& gpu, KernelClassBytes class_bytes = {});
/// Time of a compute, copy or optimizer op alone: its GEMMs plus its memory-bound bytes. `dtype` is the GEMM input
/// dtype (the schedule's compute dtype). Host copies (send/recv bytes) are not included: they are transfers.
TimeNs compute_time_ns(const Op& op, const GpuProfile& gpu, DType dtype,
                       AttentionKernel kernel = AttentionKernel::flash,
                       Fp8GemmScaling scaling = Fp8GemmScaling::tensorwise, int64_t query_heads_per_kv_head = 1);
/// Peak dense FLOP/s of `dtype` on this GPU; throws ConfigError when the GPU has no such units (FP8 on A100).
double peak_flops_per_s(const GpuProfile& gpu, DType dtype);

}  // namespace fsdpsim
