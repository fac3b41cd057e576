// What NCCL's topology graph search would find on a topology, and the shared helpers of the cost candidates.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "common/error.h"
#include "sim/nccl/nccl_model.h"
#include "sim/nccl/nccl_tables.h"

namespace fsdpsim::nccl {
namespace {

// The ring/tree graph search starts from maxChannels = MAXCHANNELS/2 = 16 search channels; no preset reaches it.
constexpr int32_t kMaxSearchChannels = 16;
// Execution channels are capped by MAXCHANNELS (32 before 2.25).
constexpr int32_t kMaxChannels = 32;

// NCCL's ring graph on an NVSwitch: try each per-channel speed from high to low, fit as many channels as the GPU's
// NVLink figure allows, keep the largest total (the first one on ties); then ncclTopoDupChannels doubles the channels
// at half speed when the speed is >= 25, unless SM > 80 and speed < 50 with more than 4 channels
// (docs/architecture.md §6.5). This reproduces the graphs listed there: H100 6 × 60 → 12 × 30 = 360;
// A100 6 × 40 → 12 × 20 = 240; B200 8 × 90 → 16 × 45 = 720; an H800's 8-link NVLink (164.8) 4 × 40 → 8 × 20 = 160.
std::pair<int32_t, double> ring_graph(double nvlink_gbps, const ArchTables& tables, GpuArch arch) {
  int32_t channels = 0;
  double speed = 0;
  for (double s : tables.search_speeds) {
    if (s > nvlink_gbps) continue;
    const auto fit = static_cast<int32_t>(std::floor(nvlink_gbps / s + 1e-9));
    const int32_t c = std::min(fit, kMaxSearchChannels);
    if (c * s > channels * speed) {
      channels = c;
      speed = s;
    }
  }
  if (channels == 0) return {1, nvlink_gbps};  // slower than every search speed: one channel at the link rate
  const bool keep = arch != GpuArch::ampere && speed < 50 && channels > 4;
  if (speed >= 25 && !keep && 2 * channels <= kMaxChannels) return {2 * channels, speed / 2};
  return {channels, speed};
}

}  // namespace

SystemGraph system_graph(const Topology& topology) {
  const ArchTables& tables = arch_tables(topology.gpu.arch);
  SystemGraph g;
  g.nvlink_gbps = topology.nvlink_bw_bytes_per_s / 1e9 * tables.nccl_link_fraction;
  if (topology.xgmi_mesh) {
    // RCCL does not search rings on an xGMI mesh: it matches the node to a "rome model" with fixed rings, each using
    // one link per hop, enough of them to drive every link at once (rome_model_81: 64 rings over 8 GPUs and 7 links;
    // ROCm/rccl src/graph/rome_models.cc). The ring reaches all links: busBw = links × RCCL's link figure; the
    // channels are the profile's ring CUs.
    g.ring_channels = std::max(1, topology.gpu.ring_sms);
    g.ring_gbps = g.nvlink_gbps;
    g.ring_channel_gbps = g.ring_gbps / g.ring_channels;
  } else {
    const auto [channels, speed] = ring_graph(g.nvlink_gbps, tables, topology.gpu.arch);
    g.ring_channels = channels;
    g.ring_channel_gbps = speed;
    g.ring_gbps = channels * speed;
  }
  g.nic_gbps = topology.nic_bw_bytes_per_s / 1e9 * kNicEfficiency;
  g.gpu_net_gbps = topology.gpus_per_node > 0 ? topology.nics_per_node * g.nic_gbps / topology.gpus_per_node : 0;
  // NVLS drives the NVLink port at nvlsEff of NCCL's figure (0.85 Hopper, 0.74 Blackwell; docs/architecture.md §6.8).
  g.nvls_wire_gbps = tables.nvls_efficiency * g.nvlink_gbps;
  return g;
}

GroupShape group_shape(const Topology& topology, const SystemGraph& system, const GroupPlacement& placement) {
  GroupShape s;
  s.ranks = placement.size;
  s.domains = placement.domains;
  s.ranks_per_domain = placement.ranks_per_domain;
  s.ranks_per_node = placement.ranks_per_node;
  // Rings are rail-aligned: each channel leaves a domain through one NIC, so the group's traffic between domains
  // spreads over the NICs next to its members (docs/architecture.md §6.5); MNNVL caps them at max_nics_between_domains.
  // Every domain carries the same bytes, so where members fill domains unevenly the emptiest domain, with the fewest
  // NICs, is the slowest hop and sets the rate (128 GPUs on 72-GPU racks: 56; 12 GPUs on 8-GPU nodes: 4).
  const double nics_per_gpu = static_cast<double>(topology.nics_per_node) / topology.gpus_per_node;
  double nics = placement.fewest_ranks_per_domain * nics_per_gpu;
  if (topology.max_nics_between_domains > 0)
    nics = std::min(nics, static_cast<double>(topology.max_nics_between_domains));
  s.nics_used = nics;
  s.nic_shares = nics / nics_per_gpu;
  s.domain_net_gbps = s.nic_shares * system.gpu_net_gbps;
  return s;
}

double intra_ring_gbps(const Call& call) {
  const Topology& t = *call.topology;
  if (!t.xgmi_mesh || t.gpus_per_node <= 1) return call.system.ring_gbps;
  // On a mesh a group of k GPUs of a node has k − 1 links among its members, of the node's gpus_per_node − 1.
  const int32_t members = std::min(call.group.ranks_per_domain, t.gpus_per_node);
  return call.system.ring_gbps * std::max(1, members - 1) / (t.gpus_per_node - 1);
}

double inter_latency_us(const Call& call, NcclAlgo algo, NcclProto proto) {
  // interLat = hwLat[NET] + graph latencyInter, plus latencyInter again for Simple (the flush);
  // docs/architecture.md §6.4.
  const double extra_us = static_cast<double>(call.topology->nic_latency_ns) / 1000.0;
  const double lat = net_hop_latency_us(call.topology->gpu.arch, algo)[proto_index(proto)] + extra_us;
  return proto == NcclProto::simple ? lat + extra_us : lat;
}

void finish(const Call& call, Candidate& candidate) {
  // bytes / (GB/s × 1000) = microseconds. A candidate without bandwidth (a link the topology gives 0) never finishes;
  // collective_cost drops it.
  if (candidate.bus_bw_gbps <= 0) {
    candidate.time_us = std::numeric_limits<double>::infinity();
    return;
  }
  candidate.time_us = candidate.latency_us + call.bus_bytes / (candidate.bus_bw_gbps * 1e3);
}

int32_t ring_sms(const Call& call) {
  // One channel = one CTA = one SM. The profile's ring_sms is the single-node default (24 on 8×H100/A100, 16 on
  // Blackwell since 2.28); multi-node Hopper logs show 16 ring/tree channels (docs/architecture.md §6.11).
  const GpuProfile& gpu = call.topology->gpu;
  if (gpu.arch == GpuArch::hopper && call.group.domains > 1) return std::min(gpu.ring_sms, 16);
  return gpu.ring_sms;
}

int32_t size_channels(const Call& call, NcclAlgo algo, NcclProto proto, int32_t channels) {
  // NCCL 2.28 topoGetAlgoInfo (src/enqueue.cc): a ring or tree call starts from the communicator's channels and drops
  // one while nBytes < nc · nThreads · threadThreshold, down to one. nThreads is the protocol's maximum (Simple and LL
  // 512, LL128 640: src/graph/tuning.cc on NVLink systems); threadThreshold is 64 bytes per thread for Simple and 8
  // for LL and LL128 (NCCL_*_THREAD_THRESHOLD, src/include/comm.h), times the ranks for ring LL (tuning.cc). nBytes
  // is the whole buffer, as CollectiveRequest::size_bytes. A call smaller than the threshold holds fewer SMs.
  const double threads = proto == NcclProto::ll128 ? 640.0 : 512.0;
  double threshold = proto == NcclProto::simple ? 64.0 : 8.0;
  if (algo == NcclAlgo::ring && proto == NcclProto::ll) threshold *= std::max(1, call.group.ranks);
  const auto bytes = static_cast<double>(call.request.size_bytes);
  int32_t nc = std::max(1, channels);
  while (nc >= 2 && bytes < nc * threads * threshold) --nc;
  return nc;
}

int32_t offload_sms(const Call& call, bool nvls) {
  // Registered buffers under NCCL_CTA_POLICY_EFFICIENCY: NVLS / NVLS+SHARP / CollNet kernels use 4-6 CTAs on Hopper
  // (registered_sms). Otherwise NVLS uses NVLS_NCHANNELS (nvls_sms: 16 Hopper, 24 Blackwell) and CollNet the 16
  // "collnet channels" of multi-node Hopper logs (docs/architecture.md §6.11).
  const GpuProfile& gpu = call.topology->gpu;
  if (call.request.registered && gpu.registered_sms > 0) return gpu.registered_sms;
  return nvls ? gpu.nvls_sms : std::min(ring_sms(call), 16);
}

bool nvls_reduction_ok(const CollectiveRequest& request) {
  if (request.kind == OpKind::all_gather) return true;  // no reduction
  // ncclNvlsSupported: Sum on fp16/bf16/fp32 (ncclAvg on floats is lowered to PreMulSum, which NVLS lacks; fp8 has no
  // NVLS reduction in the 2.28 model); docs/architecture.md §6.7.
  const bool sum = request.reduce_op == ReduceOp::sum;
  const bool dtype = request.dtype == DType::bf16 || request.dtype == DType::fp16 || request.dtype == DType::fp32;
  return sum && dtype;
}

}  // namespace fsdpsim::nccl
