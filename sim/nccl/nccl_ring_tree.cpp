// Ring, tree and point-to-point cost candidates of the NCCL model (NCCL 2.28 src/graph/tuning.cc;
// docs/architecture.md §6.4, §6.6, §6.10).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/nccl/nccl_model.h"
#include "sim/nccl/nccl_tables.h"

namespace fsdpsim::nccl {
namespace {

bool is_all_reduce(const Call& call) {
  return call.request.kind == OpKind::all_reduce;
}

int log2_floor(int32_t x) {
  return x <= 1 ? 0 : std::bit_width(static_cast<uint32_t>(x)) - 1;
}

// Wire bytes per payload byte of a protocol: LL sends a 4-byte flag with every 4 data bytes, LL128 uses 120 of every
// 128 bytes (the 0.5 and 120/128 of NCCL's LL/LL128 bandwidth refinements; docs/architecture.md §6.6).
double protocol_overhead(NcclProto proto) {
  switch (proto) {
    case NcclProto::ll:
      return 2.0;
    case NcclProto::ll128:
      return 128.0 / 120.0;
    case NcclProto::simple:
      return 1.0;
  }
  return 1.0;
}

// The busBw of NCCL's ring graph for this group: inside one domain the NVLink ring (nChannels × speed); across
// domains each ring also crosses every domain boundary through one NIC per channel (rail-aligned), so every bus byte
// leaves each domain once and busbw ≈ min(NVLink-effective, NIC shares × NIC-effective)
// (docs/architecture.md §6.6). With one rank per domain every hop is a network hop.
double ring_graph_gbps(const Call& call) {
  if (call.group.domains <= 1) return intra_ring_gbps(call);
  if (call.group.ranks_per_domain <= 1) return call.group.domain_net_gbps;
  return std::min(intra_ring_gbps(call), call.group.domain_net_gbps);
}

double ll_cap_gbps(const Call& call) {
  const ArchTables& tables = arch_tables(call.topology->gpu.arch);
  return call.group.domains <= 1 ? tables.ll_max_single_node_gbps
                                 : ll_max_multi_node_gbps(call.topology->gpu.arch, call.group.domains);
}

// Ring latency: base + (nsteps − nInter)·max(intraLat, netOverhead) + nInter·interLat, nsteps = 2(n−1) (AR) or n−1,
// nInter = 2(N−1) or N−1 (docs/architecture.md §6.4). With one rank per node the network hop uses Tree's NET latency.
double ring_latency_us(const Call& call, NcclProto proto) {
  const GpuArch arch = call.topology->gpu.arch;
  const int32_t n = call.group.ranks;
  const int32_t domains = call.group.domains;
  const int32_t steps = is_all_reduce(call) ? 2 * (n - 1) : n - 1;
  const int32_t inter_steps = domains <= 1 ? 0 : (is_all_reduce(call) ? 2 * (domains - 1) : domains - 1);
  double intra = nvlink_hop_latency_us(arch, NcclAlgo::ring)[proto_index(proto)];
  if (domains > 1) intra = std::max(intra, net_overhead_us(proto));
  const NcclAlgo net_row = call.group.ranks_per_domain <= 1 ? NcclAlgo::tree : NcclAlgo::ring;
  const double inter = inter_latency_us(call, net_row, proto);
  return base_latency_us(arch, NcclAlgo::ring)[proto_index(proto)] + (steps - inter_steps) * intra +
         inter_steps * inter;
}

// Scale degradation of ring all-gather / reduce-scatter across many nodes, which NCCL's model lacks: nccl #1229
// measured ring RS busbw 360/345/320/300/280/260 GB/s on 4/8/16/32/64/128 H100 nodes, i.e. 1.0 at 4 nodes, 0.83 at 32,
// 0.72 at 128 (docs/architecture.md §6.6). Linear in log2(nodes) between the knots (4, 1.0), (32, 0.85), (128, 0.72);
// 1.0 up to 4 nodes (no loss measured there); held at 0.72 beyond 128 (no data).
double ring_scale_factor(int32_t domains) {
  if (domains <= 4) return 1.0;
  const double x = std::log2(static_cast<double>(domains));
  if (x <= 5.0) return 1.0 + (0.85 - 1.0) * (x - 2.0) / 3.0;
  if (x <= 7.0) return 0.85 + (0.72 - 0.85) * (x - 5.0) / 2.0;
  return 0.72;
}

double ring_protocol_gbps(const Call& call, NcclProto proto) {
  const double bus = ring_graph_gbps(call);
  const ArchTables& tables = arch_tables(call.topology->gpu.arch);
  switch (proto) {
    case NcclProto::ll:
      return std::min(ll_cap_gbps(call), 0.5 * bus);
    case NcclProto::ll128: {
      const double factor = call.group.ranks_per_domain < 2 ? 0.7 : 0.92;
      return std::min(bus * factor, call.system.ring_channels * tables.ring_ll128_per_channel_gbps);
    }
    case NcclProto::simple:
      return bus;
  }
  return bus;
}

// Per bus byte a ring moves one byte over each hop: inside a domain that hop is NVLink; across domains, of the ppn
// ranks of a domain on one channel ppn − 1 send over NVLink and one through the NIC, and each domain's egress (every
// bus byte) spreads over the group's NIC shares.
void set_ring_loads(const Call& call, Candidate& c) {
  const double wire = protocol_overhead(c.proto);
  const GroupShape& g = call.group;
  if (g.domains <= 1) {
    c.nvlink_load = wire;
    return;
  }
  c.nvlink_load = wire * (g.ranks_per_domain - 1) / g.ranks_per_domain;
  c.network_load = wire / g.nic_shares;
}

}  // namespace

void add_ring(const Call& call, std::vector<Candidate>& out) {
  const CollectiveRequest& r = call.request;
  const bool reduces = r.kind == OpKind::reduce_scatter || r.kind == OpKind::all_reduce;
  for (NcclProto proto : kProtocols) {
    Candidate c;
    c.algo = NcclAlgo::ring;
    c.proto = proto;
    c.latency_us = ring_latency_us(call, proto);
    c.bus_bw_gbps = ring_protocol_gbps(call, proto);
    if (!is_all_reduce(call) && call.group.domains > 1) c.bus_bw_gbps *= ring_scale_factor(call.group.domains);
    // "Plateau effect of ring": multi-node ring AR Simple with nBytes/(nChannels·n) >= 64 has latency × 1.4 (Ampere+).
    // RCCL compiles this out on AMD (its HIP branch of ncclTopoGetAlgoTime applies correction tables instead).
    const double per_channel = static_cast<double>(r.size_bytes) / (call.system.ring_channels * call.group.ranks);
    if (is_all_reduce(call) && proto == NcclProto::simple && call.group.domains > 1 && per_channel >= 64 &&
        !is_amd(call.topology->gpu.arch)) {
      c.latency_us *= 1.4;
    }
    // fp8 reductions over rings of more than 8 ranks are penalised × 1024 for precision (docs/architecture.md §6.3).
    if (reduces && r.dtype == DType::fp8 && call.group.ranks > 8) c.selection_factor = 1024;
    c.channels = ring_sms(call);
    c.sms = size_channels(call, NcclAlgo::ring, proto, c.channels);
    set_ring_loads(call, c);
    finish(call, c);
    out.push_back(c);
  }
}

void add_tree(const Call& call, std::vector<Candidate>& out) {
  if (!is_all_reduce(call)) return;  // Tree is never used for AG/RS (docs/architecture.md §6.7)
  const GroupShape& g = call.group;
  const GpuArch arch = call.topology->gpu.arch;
  const ArchTables& tables = arch_tables(arch);
  const std::size_t row = node_index(g.domains);
  const double base = ring_graph_gbps(call);
  const double channels = call.system.ring_channels;
  for (NcclProto proto : kProtocols) {
    Candidate c;
    c.algo = NcclAlgo::tree;
    c.proto = proto;
    // Tree AR: base + 2·((ppn−1)·intraLat + log2(N)·interLat) (docs/architecture.md §6.4).
    c.latency_us = base_latency_us(arch, NcclAlgo::tree)[proto_index(proto)] +
                   2 * ((g.ranks_per_domain - 1) * nvlink_hop_latency_us(arch, NcclAlgo::tree)[proto_index(proto)] +
                        log2_floor(g.domains) * inter_latency_us(call, NcclAlgo::tree, proto));
    // docs/architecture.md §6.6: LL min(busBw/3.8, llMax); LL128 min(busBw·(7/9 | 120/128), nCh·perChMaxTreeLL128);
    // Simple min(0.92·busBw, nCh·perChMaxTree); then the per-size correction. NCCL's algbw is half of that (× 0.5), so
    // the nccl-tests busbw is bw·(n−1)/n.
    double bw = 0;
    if (proto == NcclProto::ll) bw = std::min(base / 3.8, ll_cap_gbps(call));
    if (proto == NcclProto::ll128) {
      bw = std::min(base * (g.domains <= 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                    channels * tables.tree_ll128_per_channel_gbps[row]);
    }
    if (proto == NcclProto::simple) bw = std::min(0.92 * base, channels * tables.tree_per_channel_gbps[row]);
    bw *= tree_correction_factor(arch, proto, call.request.size_bytes);
    const double n = g.ranks;
    c.bus_bw_gbps = bw * (n - 1) / n;
    c.channels = ring_sms(call);
    c.sms = size_channels(call, NcclAlgo::tree, proto, c.channels);
    // A chain inside each domain sends every byte twice (reduce up, broadcast down): 2S per GPU against 2S(n−1)/n bus
    // bytes. Between domains a two-node tree sends S per domain, a double binary tree 2S (interior in one tree, leaf
    // in the other), spread over the NIC shares.
    const double wire = protocol_overhead(proto);
    const double per_bus = n / (n - 1);
    c.nvlink_load = wire * per_bus * (g.ranks_per_domain - 1) / g.ranks_per_domain;
    if (g.domains <= 1) c.nvlink_load = wire * per_bus;
    if (g.domains > 1) c.network_load = wire * (g.domains == 2 ? 1.0 : 2.0) * per_bus / 2.0 / g.nic_shares;
    finish(call, c);
    out.push_back(c);
  }
}

void add_p2p(const Call& call, std::vector<Candidate>& out) {
  // all_to_all has no collective algorithm in NCCL: it is grouped point-to-point sends, each rank sending (n−1)/n of
  // the buffer. Modelled as those sends over the slowest link the group spans: NVLink (the ring's effective NVLink
  // bandwidth) within one domain, this GPU's NIC share when the group spans domains; latency one Simple step.
  const GroupShape& g = call.group;
  const GpuArch arch = call.topology->gpu.arch;
  Candidate c;
  c.algo = NcclAlgo::p2p;
  c.proto = NcclProto::simple;
  const bool across = g.domains > 1;
  const double hop = across ? inter_latency_us(call, NcclAlgo::p2p, NcclProto::simple)
                            : nvlink_hop_latency_us(arch, NcclAlgo::p2p)[proto_index(NcclProto::simple)];
  c.latency_us = base_latency_us(arch, NcclAlgo::p2p)[proto_index(NcclProto::simple)] + hop;
  c.bus_bw_gbps =
      across ? std::min(intra_ring_gbps(call), g.domain_net_gbps / g.ranks_per_domain) : intra_ring_gbps(call);
  c.sms = ring_sms(call);
  if (!across) {
    c.nvlink_load = 1.0;
  } else {
    // Of the n − 1 peers, ppn − 1 sit in this domain (NVLink) and n − ppn beyond it (the domain's NIC shares).
    const double peers = g.ranks - 1;
    c.nvlink_load = (g.ranks_per_domain - 1) / peers;
    c.network_load = (g.ranks - g.ranks_per_domain) / peers * g.ranks_per_domain / g.nic_shares;
  }
  finish(call, c);
  out.push_back(c);
}

}  // namespace fsdpsim::nccl
