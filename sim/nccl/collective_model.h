#pragma once
/// NCCL's own cost model for all-gather, reduce-scatter, all-reduce and all-to-all (docs/architecture.md §6.3): for
/// each algorithm and protocol NCCL would allow for this collective, reduction, dtype and group placement, a latency
/// plus bytes over bus bandwidth; the fastest wins, as in NCCL's topoGetAlgoInfo. Also what the kernel costs the GPU
/// (SMs) and how much of each link it loads, for the contention model.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// NCCL algorithms (NCCL_ALGO names); p2p: the grouped point-to-point sends of all_to_all (no NCCL_ALGO name).
enum class NcclAlgo : uint8_t { ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat, p2p };
/// NCCL protocols (NCCL_PROTO names).
enum class NcclProto : uint8_t { ll, ll128, simple };

/// One collective call as NCCL sees it.
struct CollectiveRequest {
  OpKind kind = OpKind::all_gather;  ///< all_gather, reduce_scatter, all_reduce or all_to_all
  int64_t size_bytes = 0;            ///< the size nccl-tests prints: whole gathered/scattered buffer, or the buffer
  DType dtype = DType::bf16;
  ReduceOp reduce_op = ReduceOp::sum;
  GroupPlacement placement;  ///< members per NVLink domain, domains, members per node, nodes
  bool registered = false;   ///< user buffers registered with NCCL (Megatron-FSDP's nccl_ub)
  /// NCCL_ALGO / NCCL_PROTO forced to one value (a measurement that set them, or a what-if); nullopt: NCCL chooses.
  /// A forced algorithm or protocol NCCL cannot run for this call is a ConfigError.
  std::optional<NcclAlgo> algo;
  std::optional<NcclProto> proto;
};

/// What the chosen algorithm costs.
struct CollectiveCost {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  TimeNs latency_ns = 0;          ///< α: the size-independent part
  double bus_bw_bytes_per_s = 0;  ///< busbw of the transfer when it runs alone (nccl-tests convention)
  int64_t bus_bytes = 0;          ///< bytes the transfer moves in busbw terms: S·(n−1)/n (AG/RS), 2S·(n−1)/n (AR)
  TimeNs time_ns = 0;             ///< latency_ns + bus_bytes / bus_bw_bytes_per_s, alone
  int32_t sms = 0;                ///< SMs (CTAs) the kernel occupies while it runs
  /// Channels the communicator sets up for this algorithm (their buffers stay allocated): sms, or for a small ring or
  /// tree call the full count it runs fewer of.
  int32_t channels = 0;
  /// NVLS / NVLSTree: NCCL's chunk for a call of this size, and the part of latency_ns that is the chunk pipeline
  /// filling (sim/nccl/nccl_pipeline.cpp); 0 for other algorithms and for profiles without the pipeline's constants.
  int64_t chunk_bytes = 0;
  TimeNs pipeline_fill_ns = 0;
  /// Wire bytes per bus byte on this GPU's NVLink port (per direction) and on its share of the node's NICs, for
  /// sharing links between concurrent collectives. 0 where the resource is not used.
  double nvlink_load = 0;
  double network_load = 0;
};

/// The cost of one call on `topology` (NCCL 2.28 tuning tables). A group of size 1, or 0 bytes, costs nothing.
/// ConfigError: a forced algo/proto NCCL cannot run here, or a link the call needs has no bandwidth in `topology`.
CollectiveCost collective_cost(const CollectiveRequest& request, const Topology& topology);

/// busbw nccl-tests would print for this call: size / time × (n−1)/n (AG/RS) or × 2(n−1)/n (AR).
double predicted_busbw_bytes_per_s(const CollectiveRequest& request, const Topology& topology);

/// Effective per-GPU link capacities the loads above are measured against (bytes/s per direction).
double nvlink_capacity_bytes_per_s(const Topology& topology);
double network_capacity_bytes_per_s(const Topology& topology);

/// All algorithms and protocols, in enum order.
const std::vector<NcclAlgo>& all_nccl_algos();
const std::vector<NcclProto>& all_nccl_protos();

/// "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat", "p2p".
std::string_view to_string(NcclAlgo a);
/// "ll", "ll128", "simple".
std::string_view to_string(NcclProto p);

}  // namespace fsdpsim
