#pragma once
/// The op and the bytes per category at the highest point of a measured step's IR memory, replayed from the
/// measured op times (pure C++). The device's pool reports how high its memory went but not when, nor what was in
/// it; replaying the IR's allocations (at each op's measured start) and releases (at its measured end) over the
/// measured times says which op reached the peak and what the peak held, as the simulator reports it.

#include <cstdint>
#include <vector>

#include "common/units.h"
#include "memory/memory_tracker.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// The highest point of the replay.
struct ReplayedPeak {
  int64_t bytes = 0;          ///< live bytes (allocator-rounded sizes, persistent buffers included)
  OpId op;                    ///< the op whose allocation reached it (none: the persistent buffers alone)
  CategoryBytes breakdown{};  ///< live bytes per category then
};

/// Replays one step: persistent buffers live throughout; each op's `allocs` at its start and `frees` at its end;
/// at equal times releases come before allocations and ties go to the lower op id (as the simulator orders them).
/// Sizes are rounded as the simulator's allocator rounds them (CachingAllocator::round_size). With `stage` >= 0, only
/// that pipeline stage's ops and persistent buffers are replayed (its GPU's memory; other ops' times are ignored).
ReplayedPeak replay_peak(const Schedule& schedule, const std::vector<TimeNs>& start_ns,
                         const std::vector<TimeNs>& end_ns, int32_t stage = -1);

}  // namespace fsdpsim
