#pragma once
/// The wording of fault reports, shared by the host and CUDA backends so that a fault reads the same on both: memory
/// in use by buffer category, a failed allocation set against the simulator's predicted peak, and lists of ranks.
/// Also the lazily computed prediction itself: the simulator runs only when a fault report needs it.

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memory/memory_tracker.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Computes the simulator's predicted allocated peak of one rank for the schedule being run (e.g. the steady step of
/// run_schedule() on the same IR and topology); nullopt when no prediction can be made.
using PredictPeakFn = std::function<std::optional<MemoryPeak>()>;

/// The prediction, computed at most once and only when asked (thread-safe: several ranks may fail at once).
class PredictedPeak {
 public:
  /// `predict` may be empty: get() then returns nullopt.
  explicit PredictedPeak(PredictPeakFn predict) : predict_(std::move(predict)) {}
  /// The prediction (computed on the first call); nullopt when there is none or computing it failed.
  std::optional<MemoryPeak> get();

 private:
  PredictPeakFn predict_;
  std::once_flag once_;
  std::optional<MemoryPeak> value_;
};

/// An allocation that failed, with what was in use at that moment.
struct AllocationFailure {
  BufferId buffer;
  OpId op;                   ///< none: the setup (persistent and registered buffers)
  int32_t step = -1;         ///< -1: the setup
  int64_t in_use_bytes = 0;  ///< bytes in use on the rank (may exceed the sum of the categories: overheads)
  CategoryBytes in_use_by_category{};
};

/// "3.0 GiB in use (activation 2.0 GiB, gathered_param 1.0 GiB)": the categories holding bytes, largest first (ties
/// in category order).
std::string describe_memory_in_use(int64_t total_bytes, const CategoryBytes& by_category);

/// "allocating 1.6 GiB for buffer 12 'params.layer.5' (gathered_param) in op 40 'ag.layer.5.mb0' (step 1) failed
/// with 74.1 GiB in use (activation 51.2 GiB, ...)".
std::string describe_allocation_failure(const Schedule& schedule, const AllocationFailure& failure);

/// "; the simulator predicted a peak of 113.4 GiB for this schedule (reached at op 'fwd.layer.9.mb0': activation
/// 80.0 GiB, ...)", or "; no simulator prediction was available" when `predicted` is empty.
std::string describe_predicted_peak(const Schedule& schedule, const std::optional<MemoryPeak>& predicted);

/// "rank 3" or "ranks 0, 1, 2" ("no rank" when empty).
std::string describe_ranks(const std::vector<int32_t>& ranks);

/// The ranks of the instance of `group` that `rank` belongs to, in group order: r0, r0 + stride, ... (Megatron's
/// rank order; see Group in schedule/ir.h).
std::vector<int32_t> group_members(const Group& group, int32_t rank);

/// "'dp_shard' [0, 1, 2, 3]" for messages.
std::string describe_members(const std::string& group_name, const std::vector<int32_t>& members);

/// "op 12 'ag.layer.2.mb0'".
std::string describe_op(const Op& op);

}  // namespace fsdpsim
