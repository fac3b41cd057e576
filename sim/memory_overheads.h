#pragma once
/// Device memory outside the PyTorch caching allocator's blocks: the CUDA context, cuBLAS workspaces, NCCL's
/// per-communicator channel buffers and the rounding of NCCL-registered pools. Each figure comes from the GPU
/// profile, whose YAML cites its source; the NCCL part is an estimate from NCCL_BUFFSIZE and the channel counts.

#include <cstdint>
#include <vector>

#include "schedule/ir.h"
#include "sim/op_costs.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// Fixed memory overheads of one rank.
struct MemoryOverheads {
  int64_t cuda_context_bytes = 0;
  int64_t cublas_workspace_bytes = 0;
  int64_t nccl_bytes = 0;               ///< channel buffers of every communicator the schedule uses
  int64_t nccl_registration_bytes = 0;  ///< registered (nccl_ub) buffers rounded up to the 2 MiB granularity
  int32_t communicators = 0;
  [[nodiscard]] int64_t total() const {
    return cuda_context_bytes + cublas_workspace_bytes + nccl_bytes + nccl_registration_bytes;
  }
};

/// The overheads of running `schedule` with the algorithms in `costs`.
MemoryOverheads memory_overheads(const Schedule& schedule, const Topology& topology, const std::vector<OpCost>& costs);

}  // namespace fsdpsim
