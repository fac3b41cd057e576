#pragma once
/// A human summary of a schedule: units, buckets, collectives with their bytes, prefetch depth, and persistent
/// memory per category (what `fsdpsim schedule` prints).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule/ir/ir.h"

namespace fsdpsim {

/// Collectives of one kind on one group with one size: how often they run per step.
struct CollectiveCount {
  OpKind kind = OpKind::all_gather;
  std::string group;
  int32_t group_size = 1;
  int64_t size_bytes = 0;  ///< nccl-tests size (total buffer)
  int64_t count = 0;
};

/// Figures derived from a schedule.
struct ScheduleStats {
  int32_t layers = 0;
  int64_t ops = 0;
  int64_t buffers = 0;
  std::vector<CollectiveCount> collectives;            ///< sorted by stream order of first appearance
  std::map<BufferCategory, int64_t> persistent_bytes;  ///< persistent memory per category
  int64_t persistent_total_bytes = 0;
  int64_t step_send_bytes = 0;  ///< per rank, all collectives of the step
};

/// Counts what the schedule does.
ScheduleStats schedule_stats(const Schedule& schedule);
/// The text `fsdpsim schedule` prints.
std::string schedule_summary(const Schedule& schedule);

}  // namespace fsdpsim
