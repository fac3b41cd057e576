#pragma once
/// nccl-tests' bus-bandwidth convention (NVIDIA/nccl-tests, doc/PERFORMANCE.md): a collective of S bytes over n ranks
/// moves S·(n−1)/n bus bytes per rank for all-gather, reduce-scatter and all-to-all, and 2S·(n−1)/n for all-reduce,
/// so that busbw is comparable with the link's bandwidth whatever n is. One definition for the cost model, the
/// executor's timings and the reports.

#include <cstdint>

#include "schedule/ir.h"

namespace fsdpsim {

/// Bus bytes per byte of S: 2(n−1)/n for all-reduce, (n−1)/n otherwise. `ranks` must be positive.
double busbw_factor(OpKind kind, int32_t ranks);
/// Bus bytes of one call of `size_bytes` (the size nccl-tests prints) over `ranks`.
double bus_bytes(OpKind kind, int64_t size_bytes, int32_t ranks);
/// busbw of a call that took `seconds`: size / seconds × the factor; 0 when `seconds` is not positive.
double busbw_bytes_per_s(OpKind kind, int64_t size_bytes, int32_t ranks, double seconds);

}  // namespace fsdpsim
