// The check macros' errors name the call, file:line and the library's own error string, and mark allocation
// failures. The error-string functions of the CUDA runtime, cuBLAS and NCCL work without a driver, so this runs
// anywhere the backend builds.
#include <gtest/gtest.h>

#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

std::string message_of(void (*raise)()) {
  try {
    raise();
  } catch (const CudaError& e) {
    return std::string(e.what()) + (e.out_of_memory() ? " [oom]" : "");
  }
  return "";
}

TEST(CudaCheck, CudaErrorsNameTheCallTheLineAndTheError) {
  const std::string m = message_of([] { FSDPSIM_CUDA(cudaErrorMemoryAllocation); });
  EXPECT_NE(m.find("cudaErrorMemoryAllocation failed at "), std::string::npos) << m;
  EXPECT_NE(m.find("cuda_check_test.cpp:"), std::string::npos) << m;
  EXPECT_NE(m.find(": cudaErrorMemoryAllocation ("), std::string::npos) << m;  // cudaGetErrorName, then the string
  EXPECT_NE(m.find("[oom]"), std::string::npos) << m;
  EXPECT_EQ(message_of([] { FSDPSIM_CUDA(cudaSuccess); }), "");
}

TEST(CudaCheck, CublasErrorsNameTheStatus) {
  const std::string m = message_of([] { FSDPSIM_CUBLAS(CUBLAS_STATUS_NOT_SUPPORTED); });
  EXPECT_NE(m.find("CUBLAS_STATUS_NOT_SUPPORTED failed at "), std::string::npos) << m;
  EXPECT_NE(m.find(": CUBLAS_STATUS_NOT_SUPPORTED ("), std::string::npos) << m;  // cublasGetStatusName
  EXPECT_EQ(m.find("[oom]"), std::string::npos) << m;
}

TEST(CudaCheck, NcclErrorsCarryNcclsString) {
  const std::string m = message_of([] { FSDPSIM_NCCL(ncclInvalidArgument); });
  EXPECT_NE(m.find("ncclInvalidArgument failed at "), std::string::npos) << m;
  EXPECT_NE(m.find(ncclGetErrorString(ncclInvalidArgument)), std::string::npos) << m;
}

}  // namespace
}  // namespace fsdpsim
