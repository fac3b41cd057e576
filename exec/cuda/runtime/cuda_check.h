#pragma once
/// Check macros for every CUDA runtime, cuBLAS and NCCL call of the backend: a failure throws CudaError naming the
/// call, file:line and the library's own error string (cudaGetErrorString, cublasGetStatusName/String,
/// ncclGetErrorString plus ncclGetLastError's detail). Internal to exec/cuda: it includes the CUDA headers.

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "exec/cuda/cuda_runner.h"

namespace fsdpsim {

/// Throws CudaError for a failed CUDA runtime call (out_of_memory for cudaErrorMemoryAllocation).
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
/// Throws CudaError for a failed cuBLAS or cuBLASLt call.
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
/// Throws CudaError for a failed NCCL call.
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace fsdpsim

/// Runs a CUDA runtime call; throws CudaError unless it returns cudaSuccess.
#define FSDPSIM_CUDA(call)                                                                                       \
  do {                                                                                                           \
    const cudaError_t fsdpsim_status_ = (call);                                                                  \
    if (fsdpsim_status_ != cudaSuccess) ::fsdpsim::throw_cuda_error(fsdpsim_status_, #call, __FILE__, __LINE__); \
  } while (false)

/// Runs a cuBLAS or cuBLASLt call; throws CudaError unless it returns CUBLAS_STATUS_SUCCESS.
#define FSDPSIM_CUBLAS(call)                                                     \
  do {                                                                           \
    const cublasStatus_t fsdpsim_status_ = (call);                               \
    if (fsdpsim_status_ != CUBLAS_STATUS_SUCCESS) {                              \
      ::fsdpsim::throw_cublas_error(fsdpsim_status_, #call, __FILE__, __LINE__); \
    }                                                                            \
  } while (false)

/// Runs an NCCL call; throws CudaError unless it returns ncclSuccess.
#define FSDPSIM_NCCL(call)                                                                                       \
  do {                                                                                                           \
    const ncclResult_t fsdpsim_status_ = (call);                                                                 \
    if (fsdpsim_status_ != ncclSuccess) ::fsdpsim::throw_nccl_error(fsdpsim_status_, #call, __FILE__, __LINE__); \
  } while (false)
