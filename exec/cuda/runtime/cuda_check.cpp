#include "exec/cuda/runtime/cuda_check.h"

#include <string>

namespace fsdpsim {
namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": ";
}

}  // namespace

CudaError::CudaError(const std::string& message, bool out_of_memory)
    : Error(message), fault_(out_of_memory ? CudaFault::out_of_memory : CudaFault::error) {}

CudaError::CudaError(const std::string& message, CudaFault fault) : Error(message), fault_(fault) {}

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw CudaError(where(call, file, line) + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")",
                  status == cudaErrorMemoryAllocation);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(where(call, file, line) + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")",
                  status == CUBLAS_STATUS_ALLOC_FAILED);
}

void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  std::string message = where(call, file, line) + ncclGetErrorString(status);
  // ncclGetLastError returns the detail NCCL logged for the last failure (it ignores its argument).
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && detail[0] != '\0') message += ": " + std::string(detail);
  throw CudaError(message, false);
}

}  // namespace fsdpsim
