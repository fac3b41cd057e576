#pragma once
/// What each collective op of a schedule does on this rank, decided once before the first step (pure C++, no CUDA:
/// unit-tested without a GPU): the group instance the rank belongs to (the ncclCommSplit colour and key), the NCCL
/// element count, and which IR buffers hold the input and the output.

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// This rank's place in one instance of an IR group. Members of an instance are r0, r0+stride, …,
/// r0+(size−1)·stride in Megatron's tp-cp-ep-dp order (schedule/ir.h, Group), so instances tile the world in blocks
/// of size·stride ranks, each holding `stride` interleaved instances.
struct GroupMembership {
  int32_t color = 0;  ///< index of the instance: (rank / (size·stride))·stride + rank mod stride
  int32_t rank = 0;   ///< position in the instance: (rank / stride) mod size (the order of keys = world ranks)
  int32_t size = 1;
  bool operator==(const GroupMembership&) const = default;
};

/// Where `world_rank` sits in `group`. Throws ScheduleError naming the group when size·stride does not divide
/// `world_size` (its instances would not tile the world).
GroupMembership group_membership(const Group& group, int32_t world_rank, int32_t world_size);

/// One collective op on this rank.
struct CollectivePlan {
  int64_t count = 0;  ///< NCCL count: AG sendcount, RS recvcount, AR count, all-to-all count per peer
  int64_t elem_bytes = 2;
  int64_t input_bytes = 0;    ///< bytes the call reads
  int64_t output_bytes = 0;   ///< bytes the call writes
  BufferId input_buffer;      ///< IR buffer holding the input, or none: the stream's input scratch
  BufferId output_buffer;     ///< IR buffer receiving the output, or none: the stream's output scratch
  int64_t dropped_bytes = 0;  ///< bytes of send/recv that are not a whole element (the call leaves them out)
  bool operator==(const CollectivePlan&) const = default;
};

/// Scratch one stream needs for collectives whose buffers the IR does not give (or, with `private_persistent`, whose
/// buffers are persistent).
struct CommScratch {
  int64_t input_bytes = 0;
  int64_t output_bytes = 0;
  bool operator==(const CommScratch&) const = default;
};

/// Every collective op's plan (by op id; count 0 for other ops) and the scratch per stream.
struct CommPlan {
  IdVector<OpId, CollectivePlan> ops;
  std::vector<CommScratch> scratch;
};

/// Plans the collectives. Inputs come from the op's first `reads` buffer large enough, outputs from its first
/// `writes` buffer large enough (an all-to-all whose output would be its input writes to scratch instead); with
/// `private_persistent` (the --check mode) persistent buffers are not used, because the IR does not say at which offset
/// each op touches them and checked data must not be shared between streams. Sizes that are not a whole number of
/// elements are truncated (dropped_bytes says by how much). Throws ScheduleError naming the op when a collective has no
/// valid group.
CommPlan plan_collectives(const Schedule& schedule, bool private_persistent);

}  // namespace fsdpsim
