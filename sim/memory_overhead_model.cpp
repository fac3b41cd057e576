#include "sim/memory_overhead_model.h"

#include <algorithm>
#include <map>

namespace fsdpsim {

MemoryOverheads memory_overheads(const Schedule& s, const Topology& t, const std::vector<OpCost>& costs) {
  MemoryOverheads o;
  o.cuda_context_bytes = t.gpu.cuda_context_bytes;
  // cuBLAS keeps a workspace per stream that runs GEMMs; in these schedules GEMMs run on the compute stream only.
  o.cublas_workspace_bytes = t.gpu.cublas_workspace_bytes;
  // NCCL: each communicator keeps, per channel, receive buffers for the Simple and LL128 protocols of about
  // NCCL_BUFFSIZE each (4 MiB default, NCCL docs "NCCL_BUFFSIZE"); the channel count is the CTAs its kernels use.
  // The world communicator (init_process_group) is counted too. An estimate: NCCL does not document the total.
  std::map<GroupId, int32_t> channels_per_group;
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind) || s.groups[op.group].size <= 1) continue;
    int32_t& ch = channels_per_group[op.group];
    ch = std::max(ch, costs[op.id.index()].sms);
  }
  o.communicators = static_cast<int32_t>(channels_per_group.size()) + 1;
  int64_t channels = t.gpu.ring_sms;  // the world communicator
  for (const auto& [group, ch] : channels_per_group) channels += std::max(ch, 1);
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
