#pragma once
/// Where the CUDA backend finds the operands of every GEMM of every compute op, decided once before the first step
/// (pure C++, no CUDA: unit-tested without a GPU).
///
/// A Gemm {m, n, k, batch} of the IR computes C[m×n] = A[m×k]·Wᵀ with W[n×k] row-major (schedule/
/// model_units_gemms.cpp: forward Y = X·Wᵀ, dgrad dX = dY·W with the weight as n×k, wgrad dW = dYᵀ·X). The executor
/// runs exactly those shapes:
///  - W comes from the op's gathered-parameter buffer (its largest `reads` buffer of category gathered_param) for
///    forward and dgrad GEMMs, at a cursor that advances GEMM by GEMM and wraps to the start when the rest of the
///    buffer is too small; a batch that does not fit reads one matrix for every entry (batch stride 0); a matrix
///    larger than the whole buffer, attention GEMMs and wgrad GEMMs take W from scratch;
///  - C of a "*.wgrad" GEMM goes to the op's unsharded-grad buffer (its largest `writes` buffer of that category)
///    with the same cursor rule when its whole batch fits there (never stride 0: entries would write over each other),
///    else to scratch; every other C, and every A, is per-stream scratch;
///  - scratch operands hold at most kScratchRegionCapBytes per operand, so a large batch (attention cores: batch =
///    micro-batch × heads) runs as several launches of fewer entries with the same shapes and the same FLOPs.

#include <cstdint>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// Most bytes one scratch operand region holds before a batched GEMM is split into several launches (executor
/// choice: 256 MiB keeps the scratch small next to an 80 GB GPU while each launch stays large enough for full
/// tensor-core occupancy).
inline constexpr int64_t kScratchRegionCapBytes = int64_t{256} << 20;
/// Alignment of operand offsets inside IR buffers and scratch (cuBLAS prefers 16-byte aligned operands; 256 also
/// matches cudaMalloc's alignment).
inline constexpr int64_t kOperandAlignBytes = 256;

/// Where one GEMM operand lives.
struct OperandPlace {
  BufferId buffer;           ///< the IR buffer, or none for the stream's scratch region of this operand
  int64_t offset_bytes = 0;  ///< from the buffer's (or region's) start, for the first entry of the launch
  int64_t batch_stride = 0;  ///< elements between consecutive batch entries (0: every entry reads the same one)
  bool operator==(const OperandPlace&) const = default;
};

/// One cublasGemmStridedBatchedEx launch: C[m×n] = A[m×k]·Wᵀ for `batch` entries.
struct GemmLaunch {
  int32_t gemm = 0;  ///< index into the op's gemms
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  OperandPlace a, w, c;
  bool operator==(const GemmLaunch&) const = default;
};

/// Scratch of one stream, in bytes (each region starts kOperandAlignBytes-aligned).
struct StreamScratch {
  int64_t a_bytes = 0;            ///< GEMM A operands (activations)
  int64_t w_bytes = 0;            ///< GEMM W operands not read from a gathered-parameter buffer
  int64_t c_bytes = 0;            ///< GEMM outputs not written to an unsharded-grad buffer
  int64_t memory_bytes = 0;       ///< memory-bound work and device side of host copies (copied through in chunks)
  int64_t pinned_host_bytes = 0;  ///< host side of offload copies (pinned)
  bool operator==(const StreamScratch&) const = default;
};

/// The GEMM launches of every op and the scratch each stream needs.
struct ComputePlan {
  std::vector<std::vector<GemmLaunch>> launches;  ///< by op id
  std::vector<StreamScratch> scratch;             ///< by stream
};

/// Plans every compute op's GEMMs with operands of `elem_bytes` bytes (2: BF16). Throws ScheduleError naming the op
/// and the GEMM when a dimension exceeds cuBLAS's 32-bit int.
ComputePlan plan_compute(const Schedule& schedule, int64_t elem_bytes);

}  // namespace fsdpsim
