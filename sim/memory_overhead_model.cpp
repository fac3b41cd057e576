#include "sim/memory_overhead_model.h"

#include <algorithm>
#include <vector>

namespace fsdpsim {

MemoryOverheads memory_overheads(const Schedule& s, const Topology& t, const FlatOps& flat) {
  MemoryOverheads o;
  o.cuda_context_bytes = t.gpu.cuda_context_bytes;
  // cuBLAS keeps a workspace per stream that runs GEMMs; in these schedules GEMMs run on the compute stream only.
  o.cublas_workspace_bytes = t.gpu.cublas_workspace_bytes;
  // NCCL: each communicator keeps, per channel, receive buffers for the Simple and LL128 protocols of about
  // NCCL_BUFFSIZE each (4 MiB default, NCCL docs "NCCL_BUFFSIZE"); the channel count is the CTAs its kernels use
  // at full size (a small call runs on fewer of the same channels).
  // The world communicator (init_process_group) is counted too. An estimate: NCCL does not document the total.
  std::vector<int32_t> channels_per_group(s.groups.size(), -1);  // -1: no collective on the group
  for (const FlatOp& op : flat.ops) {
    if (!is_collective(op.kind) || op.group < 0 || s.groups[GroupId(op.group)].size <= 1) continue;
    int32_t& ch = channels_per_group[static_cast<size_t>(op.group)];
    ch = std::max({ch, 0, flat.costs[static_cast<size_t>(op.cost)].channels});
  }
  int64_t channels = t.gpu.ring_sms;  // the world communicator
  o.communicators = 1;
  for (const int32_t ch : channels_per_group) {
    if (ch < 0) continue;
    ++o.communicators;
    channels += std::max(ch, 1);
  }
  o.nccl_bytes = channels * 2 * t.gpu.nccl_buffer_bytes;
  // ncclMemAlloc hands out cuMem allocations at the 2 MiB granularity (NCCL docs, user buffer registration).
  constexpr int64_t kGranularity = int64_t{2} << 20;
  for (const Buffer& b : s.buffers) {
    if (!b.nccl_registered || !b.persistent) continue;
    const int64_t rounded = (b.size_bytes + kGranularity - 1) / kGranularity * kGranularity;
    o.nccl_registration_bytes += rounded - b.size_bytes;
  }
  return o;
}

}  // namespace fsdpsim
