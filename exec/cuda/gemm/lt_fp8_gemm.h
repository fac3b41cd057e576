#pragma once
/// FP8 (E4M3) GEMMs through cuBLASLt, for measure_gpus(): C[m×n] (BF16) = A[m×k]·Wᵀ with A and W in E4M3, FP32
/// accumulation, unit scales. cuBLASLt's FP8 kernels need the "TN" layout (A transposed, B not: the cuBLAS API
/// reference, cublasLtMatmul, FP8 requirements), which is how the row-major product maps anyway. Internal.

#include <cstdint>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace fsdpsim {

/// A cuBLASLt handle and workspace on one device.
class LtFp8Gemm {
 public:
  /// Creates the handle and a workspace of `workspace_bytes` on the current device.
  explicit LtFp8Gemm(int64_t workspace_bytes);
  ~LtFp8Gemm();
  LtFp8Gemm(const LtFp8Gemm&) = delete;
  LtFp8Gemm& operator=(const LtFp8Gemm&) = delete;

  /// Enqueues `iterations` GEMMs of one shape on `stream`. Returns false, enqueueing nothing, when cuBLASLt has no
  /// FP8 algorithm for the shape (the dimensions must be multiples of 16).
  bool run(int64_t m, int64_t n, int64_t k, const void* a, const void* w, void* c, int32_t iterations,
           cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  int64_t workspace_bytes_ = 0;
};

}  // namespace fsdpsim
