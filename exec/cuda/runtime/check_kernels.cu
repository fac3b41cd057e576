// The collective-check kernels (see check_kernels.h for the patterns). Grid-stride loops; each thread counts its
// wrong elements and adds them once, so a clean check costs one atomic per thread that found none.
#include "exec/cuda/runtime/check_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstring>

namespace fsdpsim {
namespace check_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

__host__ __device__ inline float gather_value(int64_t rank, int64_t x) {
  return float((5 * rank + x) % 13);
}

__host__ __device__ inline float reduce_contribution(int64_t rank, int64_t ranks, int64_t x) {
  return (rank + x) % ranks < 2 ? float(1 + x % 5) : 0.0f;
}

__host__ __device__ inline float reduce_result(int64_t ranks, int64_t x, bool average) {
  const float sum = float(ranks < 2 ? ranks : 2) * float(1 + x % 5);
  return average ? sum / float(ranks) : sum;
}

template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <typename T>
__device__ inline float to_float(T v) {
  return float(v);
}
template <>
__device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ inline float to_float<__half>(__half v) {
  return __half2float(v);
}

// Relative precision (one unit in the last place at 1.0) and the smallest subnormal of each type: the tolerance of
// an averaged result, which is rounded once per term and once more for the sum.
template <typename T>
struct Precision;
template <>
struct Precision<float> {
  static constexpr float ulp = 1.1920929e-7f, tiny = 1.4e-45f;
};
template <>
struct Precision<__nv_bfloat16> {
  static constexpr float ulp = 7.8125e-3f, tiny = 9.2e-41f;
};
template <>
struct Precision<__half> {
  static constexpr float ulp = 9.765625e-4f, tiny = 5.9604645e-8f;
};
template <>
struct Precision<__nv_fp8_e4m3> {
  static constexpr float ulp = 0.125f, tiny = 1.953125e-3f;
};

template <typename T>
__global__ void fill_kernel(T* data, int64_t count, int32_t pattern, int32_t rank, int32_t ranks) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t x = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; x < count; x += stride) {
    const float v = pattern == int32_t(Pattern::gather) ? gather_value(rank, x) : reduce_contribution(rank, ranks, x);
    data[x] = from_float<T>(v);
  }
}

// The value element `x` of the output must hold.
__device__ inline float expected(const VerifySpec& s, int64_t x) {
  switch (s.collective) {
    case Collective::all_gather:
      return gather_value(x / s.count, x % s.count);
    case Collective::all_to_all:
      return gather_value(x / s.count, int64_t(s.rank) * s.count + x % s.count);
    case Collective::reduce_scatter:
      return reduce_result(s.ranks, int64_t(s.rank) * s.count + x, s.average);
    case Collective::all_reduce:
      return reduce_result(s.ranks, x, s.average);
  }
  return 0.0f;
}

__host__ __device__ inline int64_t output_count(const VerifySpec& s) {
  const bool whole = s.collective == Collective::all_gather || s.collective == Collective::all_to_all;
  return whole ? s.count * s.ranks : s.count;
}

template <typename T>
__global__ void verify_kernel(const T* data, VerifySpec spec, unsigned long long* wrong) {
  const int64_t n = output_count(spec);
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  unsigned long long bad = 0;
  for (int64_t x = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; x < n; x += stride) {
    const float want = expected(spec, x);
    const float got = to_float<T>(data[x]);
    const float tolerance = spec.average ? 4.0f * Precision<T>::ulp * fabsf(want) + 2.0f * Precision<T>::tiny : 0.0f;
    if (!(fabsf(got - want) <= tolerance)) ++bad;  // NaN counts as wrong
  }
  if (bad > 0) atomicAdd(wrong, bad);
}

unsigned blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

template <typename T>
void fill_as(void* data, int64_t count, Pattern pattern, int32_t rank, int32_t ranks, cudaStream_t stream) {
  fill_kernel<T>
      <<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, int32_t(pattern), rank, ranks);
}

template <typename T>
void verify_as(const void* data, const VerifySpec& spec, unsigned long long* wrong, cudaStream_t stream) {
  verify_kernel<T><<<blocks_for(output_count(spec)), kThreads, 0, stream>>>(static_cast<const T*>(data), spec, wrong);
}

}  // namespace

void fill(void* data, int64_t count, ElemType type, Pattern pattern, int32_t rank, int32_t ranks, cudaStream_t stream) {
  if (count <= 0) return;
  switch (type) {
    case ElemType::fp32:
      fill_as<float>(data, count, pattern, rank, ranks, stream);
      break;
    case ElemType::bf16:
      fill_as<__nv_bfloat16>(data, count, pattern, rank, ranks, stream);
      break;
    case ElemType::fp16:
      fill_as<__half>(data, count, pattern, rank, ranks, stream);
      break;
    case ElemType::fp8_e4m3:
      fill_as<__nv_fp8_e4m3>(data, count, pattern, rank, ranks, stream);
      break;
  }
}

void verify(const void* data, const VerifySpec& spec, unsigned long long* wrong, cudaStream_t stream) {
  if (output_count(spec) <= 0) return;
  switch (spec.type) {
    case ElemType::fp32:
      verify_as<float>(data, spec, wrong, stream);
      break;
    case ElemType::bf16:
      verify_as<__nv_bfloat16>(data, spec, wrong, stream);
      break;
    case ElemType::fp16:
      verify_as<__half>(data, spec, wrong, stream);
      break;
    case ElemType::fp8_e4m3:
      verify_as<__nv_fp8_e4m3>(data, spec, wrong, stream);
      break;
  }
}

void encode_scalar(float value, ElemType type, void* out) {
  switch (type) {
    case ElemType::fp32:
      std::memcpy(out, &value, sizeof value);
      break;
    case ElemType::bf16: {
      const __nv_bfloat16 v = __float2bfloat16_rn(value);
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case ElemType::fp16: {
      const __half v = __float2half_rn(value);
      std::memcpy(out, &v, sizeof v);
      break;
    }
    case ElemType::fp8_e4m3: {
      const __nv_fp8_e4m3 v(value);
      std::memcpy(out, &v, sizeof v);
      break;
    }
  }
}

int64_t elem_bytes(ElemType type) {
  switch (type) {
    case ElemType::fp32:
      return 4;
    case ElemType::bf16:
      return 2;
    case ElemType::fp16:
      return 2;
    case ElemType::fp8_e4m3:
      return 1;
  }
  return 0;
}

}  // namespace check_kernels
}  // namespace fsdpsim
