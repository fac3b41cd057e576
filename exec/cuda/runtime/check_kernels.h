#pragma once
/// Device kernels of the collective check (--check, nccl-tests' #wrong): fill a collective's input with a
/// rank-dependent pattern whose sums are exact in fp32, bf16, fp16 and fp8 (E4M3), and count the output elements that
/// differ from what the collective must produce. Host launchers, callable from C++20 code; the kernels live in
/// check_kernels.cu (C++17, nvcc).
///
/// Patterns (x = flat element index, r = rank in the group, n = group size):
///  - gather: g(r, x) = (5r + x) mod 13, integers 0…12 (exact in every type: E4M3 holds integers up to 16);
///  - reduce: v(r, x) = c(x) when (r + x) mod n < 2, else 0, with c(x) = 1 + x mod 5. Over the n ranks exactly
///    min(n, 2) contribute to each element, so the sum is min(n, 2)·c(x) ≤ 10, exact in every type; avg and
///    premul_sum(1/n) give that over n, checked within a few units in the last place.

#include <cstdint>

#include <cuda_runtime_api.h>

namespace fsdpsim::check_kernels {

/// Element type of a checked buffer.
enum class ElemType : int32_t { fp32 = 0, bf16 = 1, fp16 = 2, fp8_e4m3 = 3 };
/// Which pattern fills an input.
enum class Pattern : int32_t { gather = 0, reduce = 1 };
/// Which collective produced an output.
enum class Collective : int32_t { all_gather = 0, reduce_scatter = 1, all_reduce = 2, all_to_all = 3 };

/// The output of one collective call on one rank.
struct VerifySpec {
  Collective collective = Collective::all_gather;
  ElemType type = ElemType::bf16;
  int32_t rank = 0;      ///< this rank's index in the group
  int32_t ranks = 1;     ///< group size
  int64_t count = 0;     ///< NCCL count: AG sendcount, RS recvcount, AR count, all-to-all count per peer
  bool average = false;  ///< avg or premul_sum(1/n): the reduced value is divided by `ranks`
};

/// Fills `count` elements at `data` with `pattern` for rank `rank` of `ranks`, on `stream`.
void fill(void* data, int64_t count, ElemType type, Pattern pattern, int32_t rank, int32_t ranks, cudaStream_t stream);

/// Adds to `*wrong` (device memory) the number of output elements at `data` that differ from the expected result.
void verify(const void* data, const VerifySpec& spec, unsigned long long* wrong, cudaStream_t stream);

/// Writes `value` as one element of `type` to `out` (host memory; for ncclRedOpCreatePreMulSum's scalar).
void encode_scalar(float value, ElemType type, void* out);

/// Bytes of one element of `type`.
int64_t elem_bytes(ElemType type);

}  // namespace fsdpsim::check_kernels
