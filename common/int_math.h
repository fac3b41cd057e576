#pragma once
/// Whole-block integer arithmetic the models share: output tiles of a GEMM, pages of an allocator segment, padded
/// shard rows, kernel launches of a multi-tensor optimizer.

#include <cstdint>

namespace fsdpsim {

/// ⌈a / b⌉ for a ≥ 0 and b > 0: how many b-sized blocks cover a.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// a rounded up to a whole number of b-sized blocks (a ≥ 0, b > 0).
constexpr int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

}  // namespace fsdpsim
