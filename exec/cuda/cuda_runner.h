#pragma once
/// The CUDA/NCCL backend (docs/architecture.md §8.4): one cudaStream_t per IR stream and cudaEvent_t per op for
/// dependencies and timing; compute ops as cuBLAS GEMMs with the unit's real shapes reading the gathered weights and
/// writing the unsharded gradients; collectives as NCCL calls on one communicator per IR group (ncclCommSplit); buffers
/// from a stream-ordered pool (or ncclMemAlloc + window registration for nccl_ub buffers) so the peak allocated and
/// reserved memory are read from the device. Compiled only when FSDPSIM_HAVE_CUDA; this header includes no CUDA header.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/units.h"
#include "exec/backend.h"
#include "exec/fault_report.h"
#include "run/measurements.h"  // GemmSample, CollectiveSample, GpuMeasurements: one definition, shared with calibrate
#include "schedule/dtype.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// How the CUDA backend runs a schedule.
struct CudaOptions {
  int32_t steps = 2;
  int32_t emulate_world = 0;     ///< > 0: run rank 0 of an N-GPU job on one GPU (its buffers and shapes; collectives
                                 ///< replaced by device copies of the same bytes), to check a large job's memory plan
  bool check = false;            ///< verify every collective's result as nccl-tests does (#wrong)
  std::vector<int32_t> devices;  ///< local GPUs to drive from this process; empty = all visible
  bool mpi = false;              ///< one process per GPU under mpirun/srun (rank 0's NCCL id broadcast over MPI)
  /// A collective that has not finished this long after it started on the device (or after NCCL began enqueueing
  /// it) is reported and every communicator of the rank is aborted (ncclCommAbort). The default is PyTorch's for
  /// NCCL process groups, 10 minutes (torch.distributed default_pg_nccl_timeout).
  TimeNs collective_timeout_ns = 600'000'000'000;
  /// The simulator's predicted peak for this schedule, asked for only when an out-of-memory report needs it; empty:
  /// the report says no prediction was available.
  PredictPeakFn predicted_peak;
  /// What the simulator predicts given `bytes` of GPU memory (the device's total less the executor's scratch: what
  /// this run had for the schedule and the overheads), for out-of-memory reports: whether it also runs out, and at
  /// which op. Empty: not asked.
  std::function<std::string(int64_t bytes)> predict_with_memory;
};

/// What a CudaError reports.
enum class CudaFault : uint8_t {
  error,               ///< a failed CUDA, cuBLAS or NCCL call, or a device fault
  out_of_memory,       ///< an allocation (the pool, or ncclMemAlloc) that did not fit on the device
  collective_timeout,  ///< a collective that did not finish within CudaOptions::collective_timeout_ns
  nccl_async_error,    ///< a communicator reported an asynchronous error (ncclCommGetAsyncError)
  peer_failed,         ///< this rank stopped because another rank failed: a consequence, not a cause
};

/// A failed CUDA, cuBLAS or NCCL call (the message names the call, file:line and the library's error string), a
/// device fault, an allocation that did not fit (the message names the op, the buffer and the memory in use by
/// category), a collective that timed out or a communicator's asynchronous error (the op, the group and its ranks).
class CudaError : public Error {
 public:
  /// `out_of_memory` marks an allocation failure; any other is CudaFault::error.
  CudaError(const std::string& message, bool out_of_memory);
  /// A fault of the given kind.
  CudaError(const std::string& message, CudaFault fault);
  /// True for an allocation that did not fit on the device.
  [[nodiscard]] bool out_of_memory() const { return fault_ == CudaFault::out_of_memory; }
  /// What this error reports.
  [[nodiscard]] CudaFault fault() const { return fault_; }

 private:
  CudaFault fault_ = CudaFault::error;
};

/// Device memory (and pinned host memory) the executor uses beyond the IR's buffers, per rank: executor overhead,
/// not part of the measured peaks.
struct CudaOverheads {
  int64_t scratch_bytes = 0;           ///< per-stream GEMM operands, memory-bound work and collective fallbacks
  int64_t cublas_workspace_bytes = 0;  ///< cublasSetWorkspace, one per stream that runs GEMMs
  int64_t pinned_host_bytes = 0;       ///< host side of offload copies
  int64_t check_bytes = 0;             ///< #wrong counters (--check)
  // Measured with cudaMemGetInfo (device memory in use: total − free) on the rank's GPU, to set against the
  // simulator's overhead constants. Memory used lazily during the run (kernel modules loaded on first launch, the
  // buffers NCCL and cuBLAS create on first use) is what remains in use at the end beyond the pool, the scratch, the
  // registered buffers and the figures below; it is counted with the context.
  int64_t device_total_bytes = 0;      ///< what CUDA lets a process use on the GPU
  int64_t measured_context_bytes = 0;  ///< in use before any communicator or executor allocation, plus the lazy rest
  int64_t measured_nccl_bytes = 0;     ///< growth across creating the world and group communicators
  int64_t measured_cublas_bytes = 0;   ///< growth across creating the cuBLAS handles and workspaces
  int32_t communicators = 0;           ///< NCCL communicators the rank created
};

/// True when a CUDA device can be used; otherwise `why` says what is missing (no driver, no device, ...).
bool cuda_device_available(std::string* why);

/// For a pipeline run on real GPUs (not emulated), has CUDA load every kernel at start-up (CUDA_MODULE_LOADING=EAGER,
/// unless the environment already sets it): a stage's receives wait on their peer from the step's start, and a kernel
/// loaded lazily at its first launch may wait for the device to go idle first (CUDA Programming Guide, "Lazy
/// Loading", concurrent execution), so a stage's first forward GEMM could wait for its own backward receive, which
/// waits for that GEMM. Call it before the process's first CUDA call, which reads the setting.
void load_kernels_eagerly_for_pipelines(const Schedule& schedule, const CudaOptions& options);

/// Runs `schedule` on the GPUs; rank 0's steps come back in the simulator's shape. Option errors (ConfigError) are
/// raised before any device is touched.
ExecResult run_cuda(const Schedule& schedule, const CudaOptions& options);

/// Like run_cuda(), and reports rank 0's executor overheads in `overheads`.
ExecResult run_cuda(const Schedule& schedule, const CudaOptions& options, CudaOverheads& overheads);

/// Measures GEMM throughput over shapes, HBM copy bandwidth, and collective bus bandwidth over sizes (when more
/// than one GPU is visible).
GpuMeasurements measure_gpus(const std::vector<int32_t>& devices);

/// NCCL all-gather, reduce-scatter and all-reduce on several local GPUs driven from one thread (grouped calls, as
/// nccl-tests' single-thread mode), timed with CUDA events; for calibration and the collectives benchmark.
class CollectiveTimer {
 public:
  /// Creates one communicator per device (ncclCommInitAll); empty `devices` = all visible.
  explicit CollectiveTimer(std::vector<int32_t> devices);
  /// Destroys the communicators and frees the buffers.
  ~CollectiveTimer();
  CollectiveTimer(const CollectiveTimer&) = delete;
  CollectiveTimer& operator=(const CollectiveTimer&) = delete;

  /// Runs `warmup` untimed then `iterations` timed calls of `kind` (bf16) at `size_bytes` as nccl-tests prints it
  /// (AG: whole output, RS: whole input, AR: the buffer), then checks the last result (#wrong in `wrong`).
  CollectiveSample time(OpKind kind, int64_t size_bytes, int32_t warmup, int32_t iterations);
  /// Number of GPUs (ranks).
  [[nodiscard]] int32_t ranks() const;
  /// Bytes one GPU can still allocate (the smallest over the devices), to keep a sweep within memory.
  [[nodiscard]] int64_t free_bytes() const;

 private:
  struct Impl;  // communicators, streams, events, buffers: exec/cuda/nccl/collective_timer.cpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace fsdpsim
