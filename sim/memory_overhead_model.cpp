#include "sim/memory_overhead_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

namespace fsdpsim {
namespace {

// NCCL's point-to-point channels per peer (NCCL 2.28, src/graph/paths.cc, ncclTopoGetNchannels and
// ncclTopoComputeP2pChannels). A communicator takes the fewest any of its peers gets, rounded up to a power of two
// and capped by its p2p channels (its channel count rounded up to a power of two):
// - a peer over the network gets one channel per 14 GB/s of the GPU's NICs (NCCL_P2P_PER_CHANNEL_NET_BW), at least
//   one per NIC; a communicator spanning nodes then halves that while a round over its peers (8 per batch,
//   NCCL_MAX_DEV_WORK_P2P_PER_BATCH) would need more than its p2p channels;
// - a peer over NVLink gets two per NVLink between them: at least 24 on NVSwitch systems (12 links on the A100, 18
//   on Hopper and Blackwell), so the communicator's p2p channels bind;
// - an xGMI mesh joins a pair by one link: two, which RCCL doubles within a node on gfx94x (ROCm/rccl PR #1074).
// A communicator's p2p channels: its channel count (the profile's ring channels) rounded up to a power of two.
int32_t p2p_channels(const Topology& t) {
  return static_cast<int32_t>(std::bit_ceil(static_cast<uint32_t>(std::max(t.gpu.ring_sms, 1))));
}

int32_t p2p_channels_per_peer(const Topology& t, const GroupPlacement& placement) {
  const int32_t p2p = p2p_channels(t);
  if (placement.domains <= 1) return t.xgmi_mesh ? 4 : p2p;
  const int32_t nics_per_gpu = std::max(1, t.nics_per_node / std::max(t.gpus_per_node, 1));
  constexpr double kBytesPerSPerChannel = 14e9;
  const auto by_bandwidth = static_cast<int32_t>(std::ceil(nics_per_gpu * t.nic_bw_bytes_per_s / kBytesPerSPerChannel));
  auto per_peer = static_cast<int32_t>(std::bit_ceil(static_cast<uint32_t>(std::max({nics_per_gpu, by_bandwidth, 1}))));
  const int32_t rounds = (placement.size + 7) / 8;
  while (per_peer * rounds > p2p && per_peer > 1) per_peer /= 2;
  return std::min(per_peer, p2p);
}

// Pipeline sends and receives: the pp group's communicator (Megatron's batch_isend_irecv and torch.distributed
// .pipelining post them on it), with a connection to each neighbouring stage's rank. Per peer and channel the rank
// holds a receive FIFO for the LL128 and Simple protocols, NCCL_BUFFSIZE each as for a collective's channel (NCCL
// src/transport/p2p.cc, p2pRecvSetup; with P2P read the Simple FIFO sits on the sender, which is this rank for the
// other direction). Over the network the Simple FIFOs of all peers share one pool per direction instead, of
// p2p channels × 16 steps × NCCL_P2P_NET_CHUNKSIZE (128 KiB) (src/transport/net.cc, sharedNetBuffersInit). The
// busiest stage's peers are counted: the middle stages of 1F1B have two, the ends one (two under interleaving, whose
// last stage sends its chunk's output back to the first).
void add_pipeline_p2p(const Schedule& s, const Topology& t, MemoryOverheads& o) {
  const std::vector<int32_t> peers = pipeline_peers_per_stage(s);
  const int32_t busiest = *std::max_element(peers.begin(), peers.end());
  if (busiest == 0) return;
  // Every send names the pp group (validation requires a group on a send or receive).
  const auto send = std::find_if(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.kind == OpKind::send; });
  const Group& pp = s.groups[send->group];
  const GroupPlacement placement = place_group(t, s.info.world_size, pp.size, pp.stride);
  const int32_t per_peer = p2p_channels_per_peer(t, placement);
  ++o.communicators;
  o.p2p_peers = busiest;
  o.p2p_channels_per_peer = per_peer;
  o.nccl_p2p_bytes = int64_t{busiest} * per_peer * 2 * t.gpu.nccl_buffer_bytes;
  if (placement.domains > 1) {
    // The Simple FIFOs go to the shared pools: one LL128 FIFO per peer and channel stays, and the two pools come in.
    constexpr int64_t kNetChunkBytes = int64_t{128} << 10;  // NCCL_P2P_NET_CHUNKSIZE default
    constexpr int64_t kSharedSteps = 16;                    // NCCL_SHARED_STEPS
    o.nccl_p2p_bytes = int64_t{busiest} * per_peer * t.gpu.nccl_buffer_bytes +
                       2 * int64_t{p2p_channels(t)} * kSharedSteps * kNetChunkBytes;
  }
  o.nccl_bytes += o.nccl_p2p_bytes;
}

}  // namespace

std::vector<int32_t> pipeline_peers_per_stage(const Schedule& s) {
  std::set<std::pair<int32_t, int32_t>> neighbours;  // (stage, peer stage), both ways
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::send) continue;
    const int32_t from = s.stage_of(op), to = s.stage_of(s.ops[op.peer]);
    if (from == to) continue;
    neighbours.insert({from, to});
    neighbours.insert({to, from});
  }
  std::vector<int32_t> peers(static_cast<size_t>(std::max(s.info.pipeline_stages, 1)), 0);
  for (const auto& [stage, peer] : neighbours) {
    if (stage >= 0 && stage < static_cast<int32_t>(peers.size())) ++peers[static_cast<size_t>(stage)];
  }
  return peers;
}

MemoryOverheads memory_overheads(const Schedule& s, const Topology& t, const FlatOps& flat) {
  MemoryOverheads o;
  o.cuda_context_bytes = t.gpu.cuda_context_bytes;
  // cuBLAS keeps a workspace per stream that runs GEMMs; in these schedules GEMMs run on the compute stream only.
  o.cublas_workspace_bytes = t.gpu.cublas_workspace_bytes;
  // NCCL: each communicator keeps, per channel, receive buffers for the Simple and LL128 protocols of about
  // NCCL_BUFFSIZE each (4 MiB default, NCCL docs "NCCL_BUFFSIZE"); the channel count is the CTAs its kernels use
  // at full size (a small call runs on fewer of the same channels).
  // The world communicator (init_process_group) is counted too. An estimate: NCCL does not document the total.
  IdVector<GroupId, int32_t> channels_per_group(s.groups.size(), -1);  // -1: no collective on the group
  for (const FlatOp& op : flat.ops) {
    if (!is_collective(op.kind) || !op.group.valid() || s.groups[op.group].size <= 1) continue;
    int32_t& ch = channels_per_group[op.group];
    ch = std::max({ch, 0, flat.costs[op.cost].channels});
  }
  int64_t channels = t.gpu.ring_sms;  // the world communicator
  o.communicators = 1;
  for (const int32_t ch : channels_per_group) {
    if (ch < 0) continue;
    ++o.communicators;
    channels += std::max(ch, 1);
  }
  o.nccl_bytes = channels * 2 * t.gpu.nccl_buffer_bytes;
  add_pipeline_p2p(s, t, o);
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
