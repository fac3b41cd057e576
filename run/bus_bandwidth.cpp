#include "run/bus_bandwidth.h"

#include "common/error.h"

namespace fsdpsim {

double busbw_factor(OpKind kind, int32_t ranks) {
  FSDPSIM_CHECK(ranks > 0, "busbw_factor: a collective of no ranks");
  const double n = ranks;
  return kind == OpKind::all_reduce ? 2 * (n - 1) / n : (n - 1) / n;
}

double bus_bytes(OpKind kind, int64_t size_bytes, int32_t ranks) {
  return static_cast<double>(size_bytes) * busbw_factor(kind, ranks);
}

double busbw_bytes_per_s(OpKind kind, int64_t size_bytes, int32_t ranks, double seconds) {
  return seconds > 0 ? static_cast<double>(size_bytes) / seconds * busbw_factor(kind, ranks) : 0;
}

}  // namespace fsdpsim
