#pragma once
/// The reports of the CUDA backend's faults — a collective that timed out, a communicator's asynchronous NCCL error,
/// an allocation that did not fit on the device — as plain facts in, text out. Pure C++ (no CUDA header), so the
/// wording is unit-tested where there is no GPU; exec/cuda/nccl/collective_watchdog.cpp and
/// exec/cuda/cuda_backend_step.cpp gather the facts on the device.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "exec/fault_report.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Which rank and GPU a report comes from.
struct FaultSite {
  int32_t rank = 0;
  int32_t device = 0;
  int32_t world_size = 1;
};

/// A collective that did not finish within the timeout.
struct CollectiveTimeout {
  OpId op;
  int32_t step = 0;
  TimeNs ran_ns = 0;        ///< since it started on the device (or since NCCL began enqueueing it)
  TimeNs timeout_ns = 0;    ///< CudaOptions::collective_timeout_ns
  bool enqueueing = false;  ///< NCCL was still enqueueing it (ncclInProgress): e.g. connecting to a peer
  /// Members of its group instance that had issued it and those that had not, when all of them run in this process
  /// (the single-process launcher); both empty when unknown (MPI).
  std::vector<int32_t> issued;
  std::vector<int32_t> not_issued;
};

/// A communicator whose asynchronous state is an error (ncclCommGetAsyncError).
struct NcclAsyncError {
  GroupId group;            ///< the IR group, or none: the world communicator
  std::string result_name;  ///< "ncclRemoteError"
  std::string result_text;  ///< ncclGetErrorString
  std::string last_error;   ///< ncclGetLastError
  OpId last_op;             ///< the last op issued on the communicator (none: none yet)
  int32_t last_step = -1;
};

/// An allocation that did not fit on the device, with the device's own figures.
struct DeviceOutOfMemory {
  AllocationFailure failure;        ///< the op, the buffer, the IR buffers live at that moment by category
  std::string allocator;            ///< "cudaMallocFromPoolAsync", "ncclMemAlloc (ncclUnhandledCudaError: ...)"
  int64_t pool_reserved_bytes = 0;  ///< the pool's ReservedMemCurrent
  int64_t registered_bytes = 0;     ///< ncclMemAlloc'd buffers
  int64_t executor_bytes = 0;       ///< executor scratch, cuBLAS workspaces, #wrong counters
  int64_t device_free_bytes = 0;    ///< cudaMemGetInfo
  int64_t device_total_bytes = 0;
  /// What the simulator predicts for the schedule given the memory this run had for it (CudaOptions::
  /// predict_with_memory); empty when nobody asked.
  std::string same_memory_prediction;
};

/// "'dp_shard' [0, 1, 2, 3]", or for large groups "'dp_shard' [0, 8, 16, ..., 1016] (128 ranks)": the members of the
/// instance of `group` (-1: the world) that `rank` belongs to.
std::string describe_group_instance(const Schedule& schedule, GroupId group, int32_t rank, int32_t world_size);

/// "collective timed out on rank 0 (GPU 0): op 17 'ag.layer.2.mb0' (all_gather over 'dp_shard' [0, 1, 2, 3], step 1)
/// had run 600.100 s without finishing (timeout 600.000 s); ranks 0, 1, 2 had issued it, rank 3 had not; ..."
std::string describe_collective_timeout(const Schedule& schedule, const FaultSite& site,
                                        const CollectiveTimeout& timeout);

/// "NCCL error on rank 0 (GPU 0) in the communicator of group 'dp_shard' [0, 1, 2, 3]: ncclRemoteError (...): ...;
/// the last op issued on it was op 17 'ag.layer.2.mb0' (all_gather, step 1); ..."
std::string describe_nccl_async_error(const Schedule& schedule, const FaultSite& site, const NcclAsyncError& error);

/// "out of GPU memory on rank 0 (GPU 0): allocating ... failed with ... in use (...) [cudaMallocFromPoolAsync]; the
/// pool reserves ..., the device has ... free of ...; the simulator predicted a peak of ...[; given the same ...]"
std::string describe_device_oom(const Schedule& schedule, const FaultSite& site, const DeviceOutOfMemory& oom,
                                const std::optional<MemoryPeak>& predicted);

/// The sentence every abort report ends with.
inline constexpr const char* kAbortedEveryCommunicator =
    "every NCCL communicator of this rank was aborted (ncclCommAbort)";

}  // namespace fsdpsim
