#pragma once
/// Which communication budgets build the same schedule. Megatron-FSDP's budget X (suggested_communication_unit_size,
/// resolved) reaches the step only through two tests: the all-gather prefetch takes buckets while the prefetched
/// size is below X / 2, and the reduce-scatter queue is joined while the queued size is above X. The builder notes
/// every test it makes here, so the budgets that answer each of them alike — one interval of X — build the same
/// ops, buffers and streams (the schedule info's prefetch_depth, a summary figure the simulator does not read, may
/// differ). A sweep over budgets simulates one budget per interval (plan/sweep.cpp).

#include <cstdint>
#include <limits>

namespace fsdpsim {

struct BudgetRange {
  int64_t min_elems = 0;                                    ///< inclusive
  int64_t max_elems = std::numeric_limits<int64_t>::max();  ///< inclusive

  /// The prefetch test `prefetched_elems < budget_elems / 2` (suggested_AG_prefetch_size = X / 2), noted.
  bool prefetch_below(int64_t prefetched_elems, int64_t budget_elems);
  /// The queue test `queued_elems > budget_elems` (suggested_RS_queue_capacity = X), noted.
  bool queue_above(int64_t queued_elems, int64_t budget_elems);
  /// Only `budget_elems` itself builds this (a test whose outcome no interval describes).
  void pin(int64_t budget_elems);
  /// Budgets in both ranges (a pipeline's stages each note their own tests).
  void intersect(const BudgetRange& other);
  [[nodiscard]] bool contains(int64_t budget_elems) const {
    return budget_elems >= min_elems && budget_elems <= max_elems;
  }
  bool operator==(const BudgetRange&) const = default;
};

}  // namespace fsdpsim
