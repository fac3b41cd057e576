#pragma once
/// Device memory outside the PyTorch caching allocator's blocks: the CUDA context, cuBLAS workspaces, NCCL's
/// per-communicator channel buffers and the rounding of NCCL-registered pools. A predicted run estimates them from
/// the GPU profile (sim/memory_overhead_model.h); a GPU run measures them with cudaMemGetInfo (exec/cuda/).

#include <cstdint>

namespace fsdpsim {

/// Fixed memory overheads of one rank.
struct MemoryOverheads {
  int64_t cuda_context_bytes = 0;
  int64_t cublas_workspace_bytes = 0;
  int64_t nccl_bytes = 0;               ///< channel buffers of every communicator the schedule uses
  /// Of nccl_bytes, the pipeline's point-to-point connections (0 without pipeline parallelism).
  int64_t nccl_p2p_bytes = 0;
  int32_t p2p_peers = 0;                ///< neighbouring stages of the busiest stage
  int32_t p2p_channels_per_peer = 0;    ///< NCCL's p2p channels to each of them
  int64_t nccl_registration_bytes = 0;  ///< registered (nccl_ub) buffers rounded up to the 2 MiB granularity
  int32_t communicators = 0;
  [[nodiscard]] int64_t total() const {
    return cuda_context_bytes + cublas_workspace_bytes + nccl_bytes + nccl_registration_bytes;
  }
};

}  // namespace fsdpsim
