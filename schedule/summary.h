#pragma once
/// A human summary of a schedule: units, buckets, collectives with their bytes, prefetch depth, and persistent
/// memory per category (what `fsdpsim schedule` prints).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"
#include "schedule/ir.h"

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

/// The model's size as a schedule records it (zeros for a schedule file that does not say).
struct ModelSize {
  int64_t params = 0;           ///< the whole model
  int64_t active_params = 0;    ///< touched by one token (MoE: top-k routed experts)
  int64_t params_per_rank = 0;  ///< one rank's TP/EP slice, before FSDP sharding
  int64_t flops_per_token = 0;  ///< model FLOPs (forward + backward, no recompute) per trained token
};

/// The model size of `schedule`.
ModelSize model_size(const Schedule& schedule);
/// "671.0B parameters (37.5B active), 5.23B per rank before FSDP sharding, 2.25 TFLOP per token"; empty when the
/// schedule does not record the parameter count.
std::string model_size_text(const ModelSize& size);

/// Counts what the schedule does.
ScheduleStats schedule_stats(const Schedule& schedule);
/// The text `fsdpsim schedule` prints.
std::string schedule_summary(const Schedule& schedule);

}  // namespace fsdpsim
