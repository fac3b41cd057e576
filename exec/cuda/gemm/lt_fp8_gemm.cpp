#include "exec/cuda/gemm/lt_fp8_gemm.h"

#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

// Owns the descriptors of one matmul.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors() {
    if (preference != nullptr) (void)cublasLtMatmulPreferenceDestroy(preference);
    if (c != nullptr) (void)cublasLtMatrixLayoutDestroy(c);
    if (b != nullptr) (void)cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) (void)cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) (void)cublasLtMatmulDescDestroy(op);
  }
};

// Column-major view of row-major C = A·Wᵀ: Cᵀ[n×m] = W·Aᵀ, cuBLASLt's A = W stored k×n (transposed), its B = A
// stored k×m (not transposed), its C and D = Cᵀ, n×m in BF16.
void describe(LtDescriptors& d, int64_t m, int64_t n, int64_t k, int64_t workspace_bytes) {
  FSDPSIM_CUBLAS(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  FSDPSIM_CUBLAS(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  FSDPSIM_CUBLAS(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  // Fast accumulation, as Transformer Engine runs its forward FP8 GEMMs: the rate training actually gets.
  const int8_t fast = 1;
  FSDPSIM_CUBLAS(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  FSDPSIM_CUBLAS(cublasLtMatrixLayoutCreate(&d.a, CUDA_R_8F_E4M3, u(k), u(n), k));
  FSDPSIM_CUBLAS(cublasLtMatrixLayoutCreate(&d.b, CUDA_R_8F_E4M3, u(k), u(m), k));
  FSDPSIM_CUBLAS(cublasLtMatrixLayoutCreate(&d.c, CUDA_R_16BF, u(n), u(m), n));
  FSDPSIM_CUBLAS(cublasLtMatmulPreferenceCreate(&d.preference));
  const auto bytes = static_cast<size_t>(workspace_bytes);
  FSDPSIM_CUBLAS(cublasLtMatmulPreferenceSetAttribute(d.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
                                                      sizeof bytes));
}

}  // namespace

LtFp8Gemm::LtFp8Gemm(int64_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  FSDPSIM_CUBLAS(cublasLtCreate(&handle_));
  FSDPSIM_CUDA(cudaMalloc(&workspace_, static_cast<size_t>(workspace_bytes)));
}

LtFp8Gemm::~LtFp8Gemm() {
  if (workspace_ != nullptr) (void)cudaFree(workspace_);
  if (handle_ != nullptr) (void)cublasLtDestroy(handle_);
}

bool LtFp8Gemm::run(int64_t m, int64_t n, int64_t k, const void* a, const void* w, void* c, int32_t iterations,
                    cudaStream_t stream) {
  if (m % 16 != 0 || n % 16 != 0 || k % 16 != 0) return false;
  LtDescriptors d;
  describe(d, m, n, k, workspace_bytes_);
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(handle_, d.op, d.a, d.b, d.c, d.c, d.preference, 1, &best, &found);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || found < 1) return false;
  if (s != CUBLAS_STATUS_SUCCESS) throw_cublas_error(s, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  const float alpha = 1.0f, beta = 0.0f;
  for (int32_t i = 0; i < iterations; ++i) {
    FSDPSIM_CUBLAS(cublasLtMatmul(handle_, d.op, &alpha, w, d.a, a, d.b, &beta, c, d.c, c, d.c, &best.algo, workspace_,
                                  static_cast<size_t>(workspace_bytes_), stream));
  }
  return true;
}

}  // namespace fsdpsim
