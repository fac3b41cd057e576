#pragma once
/// Internal to sim/: the pieces of the NCCL collective model (collective_model.h) — what NCCL's graph search would find
/// on a topology, and one cost candidate per (algorithm, protocol) NCCL would consider for a call. Units follow NCCL's
/// tables: microseconds and GB/s (10^9 bytes/s).

#include <cstdint>
#include <vector>

#include "sim/nccl/collective_model.h"

namespace fsdpsim::nccl {

/// NVLS heads working in parallel inside a domain: the NVLS graph has 8 channels (heads) on both Hopper ("Pattern 5 …
/// nChannels 8, bw 40/60", nccl #1197) and Blackwell ("8 heads @ 90"); the channel count follows the GPU's NVLink
/// links, not the number of GPUs in the domain (nccl #1429, AddyLaddy). docs/architecture.md §6.5.
inline constexpr int32_t kNvlsHeads = 8;

/// What NCCL's topology graph search yields on one topology (docs/architecture.md §6.5), independent of the group.
struct SystemGraph {
  double nvlink_gbps = 0;        ///< NCCL's own NVLink bandwidth per GPU and direction (links × per-link figure)
  int32_t ring_channels = 0;     ///< ring/tree graph channels after NCCL duplicates them at half speed
  double ring_channel_gbps = 0;  ///< per-channel speed of those channels
  double ring_gbps = 0;          ///< ring_channels × ring_channel_gbps: the ring busBw inside one NVLink domain
  double nic_gbps = 0;           ///< what NCCL reaches on one NIC (line rate × kNicEfficiency)
  double gpu_net_gbps = 0;       ///< one GPU's share of its node's NICs (nics_per_node × nic_gbps / gpus_per_node)
  double nvls_wire_gbps = 0;     ///< NVLink bandwidth an NVLS kernel drives per GPU (nvlsEff × nvlink_gbps)
};

/// Where one group sits, in the terms NCCL's tuning uses.
struct GroupShape {
  int32_t ranks = 1;             ///< n
  int32_t domains = 1;           ///< NCCL "nodes" (NVLink domains)
  int32_t ranks_per_domain = 1;  ///< ppn (NCCL's local ranks)
  int32_t ranks_per_node = 1;    ///< members sharing one physical node's NICs
  double nic_shares = 0;         ///< per-GPU NIC shares the group's traffic between domains spreads over, per domain
  double nics_used = 0;          ///< NICs per domain the group drives between domains (NVLS / CollNet heads)
  double domain_net_gbps = 0;    ///< nic_shares × gpu_net_gbps: the group's network bandwidth out of one domain
};

/// One call as the candidates see it.
struct Call {
  CollectiveRequest request;
  const Topology* topology = nullptr;
  SystemGraph system;
  GroupShape group;
  double bus_bytes = 0;  ///< S·(n−1)/n (all-gather, reduce-scatter, all-to-all) or 2S·(n−1)/n (all-reduce)
};

/// The cost of one (algorithm, protocol) NCCL would consider.
struct Candidate {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  double latency_us = 0;
  double bus_bw_gbps = 0;  ///< busbw the transfer reaches alone (time = latency + bus_bytes / bus_bw)
  double time_us = 0;
  double selection_factor = 1;  ///< NCCL's ranking penalty (fp8 rings: 1024); the reported time excludes it
  int32_t sms = 0;
  int32_t channels = 0;     ///< channels the communicator sets up for it when a small call runs on fewer (0: sms)
  double nvlink_load = 0;   ///< wire bytes per bus byte on this GPU's NVLink port (one direction)
  double network_load = 0;  ///< wire bytes per bus byte on this GPU's NIC share (one direction)
  [[nodiscard]] int32_t set_up_channels() const { return channels > 0 ? channels : sms; }
};

/// The graph values of `topology` (NVLink figure, ring channels, NIC rates).
SystemGraph system_graph(const Topology& topology);
/// The NCCL view of `placement` on `topology`.
GroupShape group_shape(const Topology& topology, const SystemGraph& system, const GroupPlacement& placement);

/// The ring bandwidth inside one domain for the call's group: the system's ring, or on an xGMI mesh the share of it the
/// group's own links give (k − 1 of a node's gpus_per_node − 1 links for k members).
double intra_ring_gbps(const Call& call);
/// Per-hop network latency of `algo`/`proto` including the topology's extra NIC latency (twice for Simple: the flush).
double inter_latency_us(const Call& call, NcclAlgo algo, NcclProto proto);
/// Sets time_us from latency and bandwidth (infinite when the bandwidth is 0).
void finish(const Call& call, Candidate& candidate);
/// SMs a ring/tree/p2p kernel occupies; SMs of an NVLS (`nvls`) or CollNet kernel, registered or not.
int32_t ring_sms(const Call& call);
int32_t offload_sms(const Call& call, bool nvls);
/// The channels (SMs) a ring or tree call of this size uses out of `channels`: NCCL drops channels for small calls.
int32_t size_channels(const Call& call, NcclAlgo algo, NcclProto proto, int32_t channels);

/// Ring (all protocols), tree (all-reduce) and point-to-point (all-to-all) candidates.
void add_ring(const Call& call, std::vector<Candidate>& out);
void add_tree(const Call& call, std::vector<Candidate>& out);
void add_p2p(const Call& call, std::vector<Candidate>& out);
/// NVLS (one domain, or across domains with IB SHARP), NVLSTree, CollNet (IB SHARP) and PAT candidates, each only
/// where NCCL allows it for this call.
void add_nvls(const Call& call, std::vector<Candidate>& out);
void add_nvls_tree(const Call& call, std::vector<Candidate>& out);
void add_collnet(const Call& call, std::vector<Candidate>& out);
void add_pat(const Call& call, std::vector<Candidate>& out);

/// How the chosen NVLS / NVLSTree kernel moves this call in chunks (nccl_pipeline.cpp), beyond NCCL's tuning model:
/// the pipeline's fill is added to the latency and the per-chunk handshake lowers the bandwidth. NCCL chooses its
/// algorithm without it, so it applies to the chosen candidate only. Other algorithms: {0, 1, 0}.
struct ChunkPipeline {
  double fill_us = 0;           ///< time before the pipeline streams
  double bandwidth_factor = 1;  ///< streaming busbw ÷ the table's busbw (<= 1 below the largest calls)
  int64_t chunk_bytes = 0;      ///< NCCL's chunk size for this call; 0 where no pipeline applies
};
ChunkPipeline chunk_pipeline(const Call& call, const Candidate& chosen);

/// Whether NCCL can run this reduction on NVLS: ncclSum on bf16/fp16/fp32 (ncclNvlsSupported;
/// docs/architecture.md §6.7).
bool nvls_reduction_ok(const CollectiveRequest& request);

}  // namespace fsdpsim::nccl
