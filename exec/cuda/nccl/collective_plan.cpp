#include "exec/cuda/nccl/collective_plan.h"

#include <algorithm>

#include "common/error.h"
#include "schedule/dtype.h"

namespace fsdpsim {
namespace {

constexpr int64_t kAlignBytes = 256;  // as the GEMM scratch (exec/cuda/gemm/gemm_plan.h)

int64_t align_up(int64_t bytes) {
  return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
}

// The first buffer of `ids` that holds `bytes` (skipping persistent ones when asked), or none.
BufferId first_fitting(const Schedule& s, const std::vector<BufferId>& ids, int64_t bytes, bool skip_persistent) {
  for (const BufferId id : ids) {
    if (!s.buffers.contains(id)) continue;
    const Buffer& b = s.buffers[id];
    if (b.size_bytes >= bytes && !(skip_persistent && b.persistent)) return id;
  }
  return BufferId::none();
}

[[noreturn]] void reject(const Op& op, const std::string& why) {
  throw ScheduleError("the CUDA executor cannot run collective '" + op.name + "'", {why});
}

// Count and byte sizes from the op's per-rank send/recv bytes (ir.h: AG recv = send·n, RS send = recv·n, AR send =
// recv, all-to-all send = recv split evenly over the n peers).
CollectivePlan sizes_of(const Op& op, int32_t n) {
  CollectivePlan p;
  p.elem_bytes = dtype_bytes(op.dtype);
  const int64_t eb = p.elem_bytes;
  switch (op.kind) {
    case OpKind::all_gather:
      p.count = op.send_bytes / eb;
      p.dropped_bytes = op.send_bytes - p.count * eb;
      p.input_bytes = p.count * eb;
      p.output_bytes = p.count * eb * n;
      break;
    case OpKind::reduce_scatter:
      p.count = op.recv_bytes / eb;
      p.dropped_bytes = op.recv_bytes - p.count * eb;
      p.input_bytes = p.count * eb * n;
      p.output_bytes = p.count * eb;
      break;
    case OpKind::all_reduce:
      p.count = op.send_bytes / eb;
      p.dropped_bytes = op.send_bytes - p.count * eb;
      p.input_bytes = p.output_bytes = p.count * eb;
      break;
    default:  // all_to_all
      p.count = op.send_bytes / (eb * n);
      p.dropped_bytes = op.send_bytes - p.count * eb * n;
      p.input_bytes = p.output_bytes = p.count * eb * n;
      break;
  }
  return p;
}

}  // namespace

GroupMembership group_membership(const Group& group, int32_t world_rank, int32_t world_size) {
  const int64_t block = static_cast<int64_t>(group.size) * group.stride;
  if (group.size < 1 || group.stride < 1 || block > world_size || world_size % block != 0) {
    throw ScheduleError("the executor cannot place process group '" + group.name + "'",
                        {"size " + std::to_string(group.size) + " × stride " + std::to_string(group.stride) +
                         " does not divide the world of " + std::to_string(world_size) +
                         " ranks: rebuild the schedule for this world size"});
  }
  const int32_t b = static_cast<int32_t>(block);
  return GroupMembership{(world_rank / b) * group.stride + world_rank % group.stride,
                         (world_rank / group.stride) % group.size, group.size};
}

CommPlan plan_collectives(const Schedule& schedule, bool private_persistent) {
  CommPlan plan;
  plan.ops.resize(schedule.ops.size());
  plan.scratch.resize(schedule.streams.size());
  for (size_t index = 0; index < schedule.ops.size(); ++index) {
    const Op& op = schedule.ops[index];
    if (!is_collective(op.kind)) continue;
    FSDPSIM_CHECK(schedule.streams.contains(op.stream),
                  "op '" + op.name + "' names a stream that does not exist (run validation)");
    if (!schedule.groups.contains(op.group)) {
      reject(op, "its group index " + std::to_string(op.group.value()) + " names no group of the schedule");
    }
    const int32_t n = schedule.groups[op.group].size;
    if (n < 1) reject(op, "its group has no members");
    CollectivePlan p = sizes_of(op, n);
    p.input_buffer = first_fitting(schedule, op.reads, p.input_bytes, private_persistent);
    p.output_buffer = first_fitting(schedule, op.writes, p.output_bytes, private_persistent);
    // Grouped send/recv cannot run in place (a block would be received over itself while being sent).
    if (op.kind == OpKind::all_to_all && p.output_buffer == p.input_buffer) p.output_buffer = BufferId::none();
    CommScratch& scratch = plan.scratch[op.stream.index()];
    if (!p.input_buffer.valid()) scratch.input_bytes = std::max(scratch.input_bytes, align_up(p.input_bytes));
    if (!p.output_buffer.valid()) scratch.output_bytes = std::max(scratch.output_bytes, align_up(p.output_bytes));
    plan.ops[index] = p;
  }
  return plan;
}

}  // namespace fsdpsim
