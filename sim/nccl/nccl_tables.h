#pragma once
/// Internal to sim/: NCCL 2.28's tuning constants (src/graph/tuning.cc, search.cc, topo.h) as the collective model
/// reads them. Units follow NCCL's own tables: microseconds and GB/s (1 GB/s = 10^9 bytes/s). Every value cites
/// docs/architecture.md §6, which gives the NCCL source.

#include <array>
#include <cstdint>
#include <span>

#include "sim/nccl/collective_model.h"
#include "topologies/hardware.h"

namespace fsdpsim::nccl {

/// NCCL's three protocols in its table order (LL, LL128, Simple).
inline constexpr std::array<NcclProto, 3> kProtocols{NcclProto::ll, NcclProto::ll128, NcclProto::simple};

/// A per-protocol triple indexed by NcclProto (LL, LL128, Simple).
using ProtoTriple = std::array<double, 3>;

/// Index of a protocol in a ProtoTriple.
constexpr std::size_t proto_index(NcclProto p) {
  return static_cast<std::size_t>(p);
}

/// Which row of NCCL's 3-column node-count tables applies: 1 node, 2 nodes, 3 or more (NVLink domains).
constexpr std::size_t node_index(int32_t domains) {
  return domains <= 1 ? 0 : (domains == 2 ? 1 : 2);
}

/// Per-architecture constants of the graph search and the bandwidth refinements.
struct ArchTables {
  double nccl_link_fraction = 0;                        ///< NCCL's per-NVLink bandwidth ÷ the datasheet per-link rate
  std::span<const double> search_speeds;                ///< intra-node per-channel speeds the graph search tries, GB/s
  double ll_max_single_node_gbps = 0;                   ///< llMaxBws, one node
  double ring_ll128_per_channel_gbps = 0;               ///< perChMaxRingLL128Bws
  std::array<double, 3> tree_ll128_per_channel_gbps{};  ///< perChMaxTreeLL128Bws (1 / 2 / >=3 nodes)
  std::array<double, 3> tree_per_channel_gbps{};        ///< perChMaxTreeBws (1 / 2 / >=3 nodes)
  std::array<double, 3> nvls_tree_per_channel_gbps{};   ///< perChMaxNVLSTreeBws (0 where NVLS does not exist)
  double nvls_efficiency = 0;  ///< nvlsEff of the 2.28 NVLS bandwidth (0: no NVLS on this arch)
};

/// The tables of `arch`.
const ArchTables& arch_tables(GpuArch arch);

/// LL bandwidth cap across nodes: NCCL picks it by CPU vendor (Intel/ARM assumed: 39.0 on 2 nodes, 20.4 on >= 3);
/// RCCL (AMD) has no such table and keeps its one LL ratio of the ring graph (ll_max_single_node_gbps).
double ll_max_multi_node_gbps(GpuArch arch, int32_t domains);

/// baseLat[algo] (us) per protocol (NCCL's table, or RCCL's for AMD).
const ProtoTriple& base_latency_us(GpuArch arch, NcclAlgo algo);
/// hwLat[NVLink][algo] (us) per protocol: the per-hop latency of an intra-domain step (RCCL: an xGMI hop).
const ProtoTriple& nvlink_hop_latency_us(GpuArch arch, NcclAlgo algo);
/// hwLat[NET][algo] (us) per protocol: the per-hop latency of a step through the network.
const ProtoTriple& net_hop_latency_us(GpuArch arch, NcclAlgo algo);

/// Network post overhead per ring step across nodes (us): 1.0 on Intel x86 and ARM hosts, × 3 for Simple.
double net_overhead_us(NcclProto proto);

/// Tree all-reduce bandwidth correction by message size (ncclTopoGetAlgoTime); 1.0 outside the table and on AMD.
double tree_correction_factor(GpuArch arch, NcclProto proto, int64_t size_bytes);

/// Fraction of a NIC's line rate that NCCL's rings reach per port: 0.92, the low end of the 0.92-0.96 measured for NDR
/// (docs/architecture.md §6.5; NCCL reaches 46-48 of 50 GB/s per NDR NIC, nccl-tests #290; 20-24 of 25 per HDR NIC,
/// nccl #412/#320). NCCL's own graph speed for a 400G NIC is 48 (SM90 inter-node list of src/graph/search.cc, §6.5).
inline constexpr double kNicEfficiency = 0.92;

}  // namespace fsdpsim::nccl
