#include "builders/budget_range.h"

#include <algorithm>

namespace fsdpsim {

bool BudgetRange::prefetch_below(int64_t prefetched_elems, int64_t budget_elems) {
  const bool below = prefetched_elems < budget_elems / 2;
  // p < X / 2 (integer division) holds exactly for X >= 2p + 2; sizes stay below 2^50 parameters (common/limits.h).
  if (below) {
    min_elems = std::max(min_elems, 2 * prefetched_elems + 2);
  } else {
    max_elems = std::min(max_elems, 2 * prefetched_elems + 1);
  }
  return below;
}

bool BudgetRange::queue_above(int64_t queued_elems, int64_t budget_elems) {
  const bool above = queued_elems > budget_elems;
  if (above) {
    max_elems = std::min(max_elems, queued_elems - 1);
  } else {
    min_elems = std::max(min_elems, queued_elems);
  }
  return above;
}

void BudgetRange::pin(int64_t budget_elems) {
  min_elems = std::max(min_elems, budget_elems);
  max_elems = std::min(max_elems, budget_elems);
}

void BudgetRange::intersect(const BudgetRange& other) {
  min_elems = std::max(min_elems, other.min_elems);
  max_elems = std::min(max_elems, other.max_elems);
}

}  // namespace fsdpsim
