// measure_gpus (`fsdpsim calibrate --gpu`): BF16 and FP8 GEMM throughput over a sweep of shapes, device-to-device
// copy bandwidth, and — with two or more GPUs — all-gather / reduce-scatter / all-reduce bus bandwidth over sizes.
// Every measurement runs warm-up launches first and times several back-to-back iterations with CUDA events.
#include <algorithm>
#include <memory>
#include <utility>

#include <cublas_v2.h>

#include "common/units.h"
#include "exec/cuda/gemm/lt_fp8_gemm.h"
#include "exec/cuda/runtime/check_kernels.h"
#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

// Warm-up and timed iterations as nccl-tests runs them by default (-n 20; -w 5 in most of its versions' READMEs),
// for GEMMs and copies alike.
constexpr int32_t kGemmWarmup = 5;
constexpr int32_t kGemmIterations = 20;
constexpr int32_t kCopyIterations = 20;
// Far beyond the 50 MB L2 of an H100 (NVIDIA H100 Tensor Core GPU Architecture whitepaper): the copy runs from HBM.
constexpr int64_t kCopyBytes = kGiB;
constexpr int64_t kWorkspaceBytes = 32 * kMiB;  // cuBLAS's recommended workspace on Hopper (cublasSetWorkspace)

struct Shape {
  int64_t m, n, k;
};

// Square GEMMs 1024…16384, then m = 4096 and 8192 tokens against the (n, k) of the linear layers of Llama-3-8B
// (hidden 4096, FFN 14336, 32 heads, 8 KV heads of 128) and Llama-3-70B (hidden 8192, FFN 28672, 64 heads, 8 KV
// heads): model/models/llama3-{8b,70b}.yaml, with the fused QKV (n = (heads + 2·kv)·128) and fused gate+up
// (n = 2·FFN) of model/model_units_gemms.cpp.
std::vector<Shape> gemm_shapes() {
  std::vector<Shape> shapes;
  for (int64_t s = 1024; s <= 16384; s *= 2) shapes.push_back({s, s, s});
  const std::vector<std::pair<int64_t, int64_t>> layers{
      {6144, 4096},  {4096, 4096}, {28672, 4096}, {4096, 14336},   // Llama-3-8B: qkv, attn_proj, gate_up, down
      {10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}};  // Llama-3-70B
  for (const int64_t m : {4096, 8192}) {
    for (const auto& [n, k] : layers) shapes.push_back({m, n, k});
  }
  return shapes;
}

// Device memory freed when it goes out of scope.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(int64_t bytes) { FSDPSIM_CUDA(cudaMalloc(&p, static_cast<size_t>(bytes))); }
  ~DeviceBuffer() { (void)cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Timing {
  cudaEvent_t start = nullptr, end = nullptr;
  Timing() {
    FSDPSIM_CUDA(cudaEventCreate(&start));
    FSDPSIM_CUDA(cudaEventCreate(&end));
  }
  ~Timing() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(end);
  }
  Timing(const Timing&) = delete;
  Timing& operator=(const Timing&) = delete;
  double seconds() const {
    FSDPSIM_CUDA(cudaEventSynchronize(end));
    float ms = 0;
    FSDPSIM_CUDA(cudaEventElapsedTime(&ms, start, end));
    return static_cast<double>(ms) / 1e3;
  }
};

// The operands of the whole sweep, sized to its largest A, W and C, filled with small integers (real-valued data
// draws the power real GEMMs draw; zeros would run faster).
struct GemmOperands {
  std::unique_ptr<DeviceBuffer> a, w, c;
  explicit GemmOperands(const std::vector<Shape>& shapes, cudaStream_t s) {
    int64_t a_elems = 0, w_elems = 0, c_elems = 0;
    for (const Shape& g : shapes) {
      a_elems = std::max(a_elems, g.m * g.k);
      w_elems = std::max(w_elems, g.n * g.k);
      c_elems = std::max(c_elems, g.m * g.n);
    }
    a = std::make_unique<DeviceBuffer>(a_elems * 2);
    w = std::make_unique<DeviceBuffer>(w_elems * 2);
    c = std::make_unique<DeviceBuffer>(c_elems * 2);
    for (auto [p, n] : {std::pair{a->p, a_elems}, {w->p, w_elems}}) {
      check_kernels::fill(p, n, check_kernels::ElemType::bf16, check_kernels::Pattern::gather, 0, 1, s);
    }
    FSDPSIM_CUDA(cudaGetLastError());
  }
};

void bf16_gemms(cublasHandle_t blas, const Shape& g, const GemmOperands& ops, int32_t iterations) {
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  for (int32_t i = 0; i < iterations; ++i) {
    // Row-major C[m×n] = A·Wᵀ as column-major Cᵀ = W·Aᵀ ("TN"), as the executor runs it (cuda_backend_ops.cpp).
    FSDPSIM_CUBLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, ops.w->p, CUDA_R_16BF, k, ops.a->p,
                                CUDA_R_16BF, k, &beta, ops.c->p, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
  }
}

// 2·m·n·k FLOPs per GEMM over the timed iterations.
GemmSample rate(const Shape& g, DType dtype, double seconds) {
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  return GemmSample{g.m, g.n, g.k, dtype, seconds > 0 ? flops * kGemmIterations / seconds : 0.0};
}

void measure_bf16(cudaStream_t s, const std::vector<Shape>& shapes, const GemmOperands& ops, GpuMeasurements& out) {
  cublasHandle_t blas = nullptr;
  FSDPSIM_CUBLAS(cublasCreate(&blas));
  const std::unique_ptr<cublasContext, cublasStatus_t (*)(cublasHandle_t)> owner(blas, cublasDestroy);
  const DeviceBuffer workspace(kWorkspaceBytes);
  FSDPSIM_CUBLAS(cublasSetStream(blas, s));  // before the workspace: setting the stream resets it
  FSDPSIM_CUBLAS(cublasSetWorkspace(blas, workspace.p, static_cast<size_t>(kWorkspaceBytes)));
  const Timing t;
  for (const Shape& g : shapes) {
    bf16_gemms(blas, g, ops, kGemmWarmup);
    FSDPSIM_CUDA(cudaEventRecord(t.start, s));
    bf16_gemms(blas, g, ops, kGemmIterations);
    FSDPSIM_CUDA(cudaEventRecord(t.end, s));
    out.gemms.push_back(rate(g, DType::bf16, t.seconds()));
  }
}

// FP8 tensor cores exist from compute capability 8.9 (Ada) and 9.0 (Hopper) on.
void measure_fp8(int device, cudaStream_t s, const std::vector<Shape>& shapes, const GemmOperands& ops,
                 GpuMeasurements& out) {
  int major = 0, minor = 0;
  FSDPSIM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FSDPSIM_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major * 10 + minor < 89) return;
  LtFp8Gemm lt(kWorkspaceBytes);
  const Timing t;
  for (const Shape& g : shapes) {
    // The BF16 operands reinterpreted as E4M3 bytes: small finite values either way, and the rate does not depend on
    // them.
    if (!lt.run(g.m, g.n, g.k, ops.a->p, ops.w->p, ops.c->p, kGemmWarmup, s)) continue;
    FSDPSIM_CUDA(cudaEventRecord(t.start, s));
    (void)lt.run(g.m, g.n, g.k, ops.a->p, ops.w->p, ops.c->p, kGemmIterations, s);
    FSDPSIM_CUDA(cudaEventRecord(t.end, s));
    out.gemms.push_back(rate(g, DType::fp8, t.seconds()));
  }
}

// CUDA samples' bandwidthTest counts a device-to-device copy twice (it reads and writes every byte:
// NVIDIA/cuda-samples Samples/1_Utilities/bandwidthTest), which is what the profile's HBM bandwidth means too.
double copy_bandwidth(cudaStream_t s) {
  const DeviceBuffer src(kCopyBytes), dst(kCopyBytes);
  const auto bytes = static_cast<size_t>(kCopyBytes);
  for (int32_t i = 0; i < 2; ++i) FSDPSIM_CUDA(cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, s));
  const Timing t;
  FSDPSIM_CUDA(cudaEventRecord(t.start, s));
  for (int32_t i = 0; i < kCopyIterations; ++i) {
    FSDPSIM_CUDA(cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, s));
  }
  FSDPSIM_CUDA(cudaEventRecord(t.end, s));
  const double seconds = t.seconds();
  return seconds > 0 ? 2.0 * static_cast<double>(kCopyBytes) * kCopyIterations / seconds : 0.0;
}

// Bytes one GPU holds for a call at `size` (nccl-tests' printed size): input plus output.
int64_t footprint(OpKind kind, int64_t size, int32_t n) {
  return kind == OpKind::all_reduce ? 2 * size : size + size / n;
}

// Sizes 1 MiB…4 GiB by powers of two, as far as memory allows; nccl-tests' 5 warm-up and 20 timed iterations,
// fewer (2 and 5) from 256 MiB on, where each call already takes milliseconds.
void measure_collectives(const std::vector<int32_t>& devices, GpuMeasurements& out) {
  CollectiveTimer timer(devices);
  const int32_t n = timer.ranks();
  for (const OpKind kind : {OpKind::all_gather, OpKind::reduce_scatter, OpKind::all_reduce}) {
    for (int64_t size = kMiB; size <= 4 * kGiB; size *= 2) {
      if (footprint(kind, size, n) > timer.free_bytes() * 9 / 10) break;
      const bool large = size >= 256 * kMiB;
      out.collectives.push_back(timer.time(kind, size, large ? 2 : 5, large ? 5 : 20));
    }
  }
}

}  // namespace

GpuMeasurements measure_gpus(const std::vector<int32_t>& devices) {
  std::string why;
  if (!cuda_device_available(&why)) throw CudaError("cannot measure the GPUs: " + why, false);
  const int device = devices.empty() ? 0 : devices.front();
  FSDPSIM_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  FSDPSIM_CUDA(cudaGetDeviceProperties(&prop, device));
  GpuMeasurements out;
  out.device = prop.name;
  out.sm_count = prop.multiProcessorCount;
  out.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  cudaStream_t s = nullptr;
  FSDPSIM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::unique_ptr<CUstream_st, cudaError_t (*)(cudaStream_t)> stream(s, cudaStreamDestroy);
  {
    const std::vector<Shape> shapes = gemm_shapes();
    const GemmOperands ops(shapes, s);
    measure_bf16(s, shapes, ops, out);
    measure_fp8(device, s, shapes, ops, out);
  }
  out.copy_bw_bytes_per_s = copy_bandwidth(s);
  int count = 0;
  FSDPSIM_CUDA(cudaGetDeviceCount(&count));
  const size_t gpus = devices.empty() ? static_cast<size_t>(count) : devices.size();
  if (gpus >= 2) measure_collectives(devices, out);
  return out;
}

}  // namespace fsdpsim
