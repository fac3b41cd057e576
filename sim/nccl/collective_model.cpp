// The NCCL collective cost model: gathers the (algorithm, protocol) candidates NCCL would consider for a call
// (nccl_ring_tree.cpp, nccl_offload.cpp) and picks the fastest, as NCCL's topoGetAlgoInfo does.
//
// NCCL 2.28's tables and formulas (docs/architecture.md §6.3) are followed as written, except where measurements
// (§6.16) show them off; each departure (§6.12) is documented where it is made:
// - NVLS all-reduce busbw = nvlsEff·NVLink·2(h−1)/(h+1), h = min(local ranks, 8 heads) (nccl_offload.cpp): the
//   multicast traffic, which matches 5-8 GPUs and B200/NVL72 where 2.28's formula is 15 % low;
// - ring all-gather/reduce-scatter lose bandwidth beyond 4 nodes (nccl #1229; nccl_ring_tree.cpp);
// - a NIC gives 0.92 of its line rate and a group spanning domains is capped by its NIC shares (rings are
//   rail-aligned; docs/architecture.md §6.5), where NCCL reads the graph's bwInter;
// - with registered buffers candidates are ranked with NCCL's 2.5 %-per-SM charge (CTA policy efficiency);
// - a chosen NVLS / NVLSTree call pays its chunk pipeline (fill and per-chunk handshakes; nccl_pipeline.cpp), which
//   NCCL's model leaves out and which makes medium sizes slower than its tables (8×B200 128 MiB: 568 GB/s, not 763);
// - all_to_all: point-to-point sends over the slowest link the group spans (nccl_ring_tree.cpp).
#include "sim/nccl/collective_model.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "run/bus_bandwidth.h"
#include "sim/nccl/nccl_model.h"

namespace fsdpsim {
namespace {

// NCCL's symmetric-kernel selection charges 2.5 % extra time per SM a kernel uses (src/sym_kernels.cc;
// docs/architecture.md §6.3). With registered buffers Megatron-FSDP runs NCCL under NCCL_CTA_POLICY_EFFICIENCY, which
// prefers the low-SM NVLS / CollNet kernels; the same charge ranks the candidates then, so NVLS AG/RS (4-6 SMs) beats a
// faster ring (16-24 SMs) only when buffers are registered (§6.7, last bullet).
constexpr double kRegisteredSmPenalty = 0.025;

bool is_supported_kind(OpKind kind) {
  return kind == OpKind::all_gather || kind == OpKind::reduce_scatter || kind == OpKind::all_reduce ||
         kind == OpKind::all_to_all;
}

double bus_bytes_of(const CollectiveRequest& r) {
  return bus_bytes(r.kind, r.size_bytes, r.placement.size);
}

std::string describe(const CollectiveRequest& r, const Topology& topology) {
  return std::string(to_string(r.kind)) + " of " + std::to_string(r.placement.size) + " ranks over " +
         std::to_string(r.placement.domains) + " NVLink domain(s) of topology '" + topology.name + "'";
}

void check_request(const CollectiveRequest& r, const Topology& topology) {
  const GroupPlacement& p = r.placement;
  FSDPSIM_CHECK(is_supported_kind(r.kind), "collective_cost: " + std::string(to_string(r.kind)) + " is no collective");
  FSDPSIM_CHECK(r.size_bytes >= 0, "collective_cost: negative size");
  // The fullest domain holds ranks_per_domain members, every other at least fewest_ranks_per_domain.
  FSDPSIM_CHECK(p.size >= 1 && p.domains >= 1 && p.fewest_ranks_per_domain >= 1 &&
                    p.fewest_ranks_per_domain <= p.ranks_per_domain &&
                    int64_t{p.ranks_per_domain} + int64_t{p.fewest_ranks_per_domain} * (p.domains - 1) <= p.size &&
                    int64_t{p.ranks_per_domain} * p.domains >= p.size,
                "collective_cost: inconsistent placement (use place_group)");
  if (p.domains > 1 && (topology.nic_bw_bytes_per_s <= 0 || topology.nics_per_node <= 0)) {
    throw ConfigError("topology '" + topology.name + "': nic_bw is 0 but a " + describe(r, topology) +
                      " crosses the network; set nic_bw (and nics_per_node) to the NICs' line rate");
  }
  if (p.ranks_per_domain > 1 && topology.nvlink_bw_bytes_per_s <= 0) {
    throw ConfigError("topology '" + topology.name + "': nvlink_bw is 0 but a " + describe(r, topology) +
                      " has several ranks in one NVLink domain; set nvlink_bw to the per-GPU, per-direction rate");
  }
}

std::vector<nccl::Candidate> candidates(const nccl::Call& call) {
  std::vector<nccl::Candidate> all;
  if (call.request.kind == OpKind::all_to_all) {
    nccl::add_p2p(call, all);
  } else {
    nccl::add_ring(call, all);
    nccl::add_tree(call, all);
    nccl::add_nvls(call, all);
    nccl::add_nvls_tree(call, all);
    nccl::add_collnet(call, all);
    nccl::add_pat(call, all);
  }
  // A candidate over a link the topology gives no bandwidth cannot run.
  std::erase_if(all, [](const nccl::Candidate& c) { return !(c.bus_bw_gbps > 0); });
  return all;
}

std::string names_of(const std::vector<nccl::Candidate>& all) {
  std::string text;
  for (const nccl::Candidate& c : all) {
    const std::string name = std::string(to_string(c.algo)) + "/" + std::string(to_string(c.proto));
    if (text.find(name) != std::string::npos) continue;
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

// NCCL_ALGO / NCCL_PROTO: keep the matching candidates; none left is an error naming what NCCL would allow.
std::vector<nccl::Candidate> apply_forcing(const nccl::Call& call, const std::vector<nccl::Candidate>& all) {
  const CollectiveRequest& r = call.request;
  std::vector<nccl::Candidate> kept;
  for (const nccl::Candidate& c : all) {
    if (r.algo && c.algo != *r.algo) continue;
    if (r.proto && c.proto != *r.proto) continue;
    kept.push_back(c);
  }
  if (kept.empty()) {
    const std::string forced = std::string(r.algo ? "algo " + std::string(to_string(*r.algo)) : "") +
                               (r.algo && r.proto ? " with " : "") +
                               (r.proto ? "proto " + std::string(to_string(*r.proto)) : "");
    throw ConfigError("CollectiveRequest: NCCL cannot run " + forced + " for a " + describe(r, *call.topology) +
                      "; valid algo/proto for this call: " + names_of(all));
  }
  return kept;
}

const nccl::Candidate& fastest(const nccl::Call& call, const std::vector<nccl::Candidate>& all) {
  const nccl::Candidate* best = nullptr;
  double best_cost = 0;
  for (const nccl::Candidate& c : all) {
    double cost = c.time_us * c.selection_factor;
    // NCCL picks the algorithm before it drops channels for a small call: the penalty counts the full channels.
    if (call.request.registered) cost *= 1 + kRegisteredSmPenalty * c.set_up_channels();
    if (best == nullptr || cost < best_cost) {  // strict: the first of equals wins (enum order), deterministically
      best = &c;
      best_cost = cost;
    }
  }
  return *best;
}

// What the chosen candidate costs when it runs. NCCL ranks candidates by its tuning model alone; the chunk pipeline of
// NVLS / NVLSTree kernels (nccl_pipeline.cpp) then adds its fill to the latency and its handshakes to the bandwidth.
CollectiveCost to_cost(const nccl::Call& call, const nccl::Candidate& c) {
  const nccl::ChunkPipeline pipeline = nccl::chunk_pipeline(call, c);
  CollectiveCost cost;
  cost.algo = c.algo;
  cost.proto = c.proto;
  // ns_from_seconds saturates: op_costs refuses absurd times.
  cost.latency_ns = ns_from_seconds((c.latency_us + pipeline.fill_us) * 1e-6);
  cost.bus_bw_bytes_per_s = c.bus_bw_gbps * 1e9 * pipeline.bandwidth_factor;
  cost.bus_bytes = std::llround(call.bus_bytes);
  cost.time_ns = cost.latency_ns + ns_from_seconds(static_cast<double>(cost.bus_bytes) / cost.bus_bw_bytes_per_s);
  cost.sms = c.sms;
  cost.channels = c.set_up_channels();
  cost.chunk_bytes = pipeline.chunk_bytes;
  cost.pipeline_fill_ns = ns_from_seconds(pipeline.fill_us * 1e-6);
  cost.nvlink_load = c.nvlink_load;
  cost.network_load = c.network_load;
  return cost;
}

}  // namespace

CollectiveCost collective_cost(const CollectiveRequest& request, const Topology& topology) {
  check_request(request, topology);
  // A group of one, or an empty buffer, moves nothing: NCCL returns at once.
  if (request.placement.size == 1 || request.size_bytes == 0) return CollectiveCost{};
  nccl::Call call;
  call.request = request;
  call.topology = &topology;
  call.system = nccl::system_graph(topology);
  call.group = nccl::group_shape(topology, call.system, request.placement);
  call.bus_bytes = bus_bytes_of(request);
  const std::vector<nccl::Candidate> all = candidates(call);
  FSDPSIM_CHECK(!all.empty(), "no NCCL algorithm for a " + describe(request, topology));  // the ring always runs
  const std::vector<nccl::Candidate> allowed = apply_forcing(call, all);
  CollectiveCost cost = to_cost(call, fastest(call, allowed));
  // A calibrated profile (fsdpsim calibrate) scales the bandwidth to what this machine measured.
  const GpuProfile& gpu = topology.gpu;
  const double scale = request.kind == OpKind::all_gather       ? gpu.busbw_scale_all_gather
                       : request.kind == OpKind::reduce_scatter ? gpu.busbw_scale_reduce_scatter
                       : request.kind == OpKind::all_reduce     ? gpu.busbw_scale_all_reduce
                                                                : 1.0;
  if (scale != 1.0 && cost.bus_bw_bytes_per_s > 0) {
    cost.bus_bw_bytes_per_s *= scale;
    cost.time_ns = cost.latency_ns + ns_from_seconds(static_cast<double>(cost.bus_bytes) / cost.bus_bw_bytes_per_s);
  }
  return cost;
}

double predicted_busbw_bytes_per_s(const CollectiveRequest& request, const Topology& topology) {
  const CollectiveCost cost = collective_cost(request, topology);
  if (cost.time_ns <= 0) return 0;
  return static_cast<double>(cost.bus_bytes) / (static_cast<double>(cost.time_ns) * 1e-9);
}

double nvlink_capacity_bytes_per_s(const Topology& topology) {
  // NCCL's own NVLink figure per GPU and direction (H100 18 × 20.6 = 370.8 GB/s): the ring (360) and NVLS (0.85 of
  // it) run below it alone, so a collective is never slowed by its own load.
  return nccl::system_graph(topology).nvlink_gbps * 1e9;
}

double network_capacity_bytes_per_s(const Topology& topology) {
  // One GPU's share of its node's NICs at the rate NCCL reaches on them (0.92 × line rate; H100 NDR: 46 GB/s).
  return nccl::system_graph(topology).gpu_net_gbps * 1e9;
}

const std::vector<NcclAlgo>& all_nccl_algos() {
  static const std::vector<NcclAlgo> algos{
      NcclAlgo::ring,           NcclAlgo::tree,          NcclAlgo::nvls, NcclAlgo::nvls_tree,
      NcclAlgo::collnet_direct, NcclAlgo::collnet_chain, NcclAlgo::pat,  NcclAlgo::p2p};
  return algos;
}

const std::vector<NcclProto>& all_nccl_protos() {
  static const std::vector<NcclProto> protos{NcclProto::ll, NcclProto::ll128, NcclProto::simple};
  return protos;
}

std::string_view to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::ring:
      return "ring";
    case NcclAlgo::tree:
      return "tree";
    case NcclAlgo::nvls:
      return "nvls";
    case NcclAlgo::nvls_tree:
      return "nvls_tree";
    case NcclAlgo::collnet_direct:
      return "collnet_direct";
    case NcclAlgo::collnet_chain:
      return "collnet_chain";
    case NcclAlgo::pat:
      return "pat";
    case NcclAlgo::p2p:
      return "p2p";
  }
  return "?";
}

std::string_view to_string(NcclProto p) {
  switch (p) {
    case NcclProto::ll:
      return "ll";
    case NcclProto::ll128:
      return "ll128";
    case NcclProto::simple:
      return "simple";
  }
  return "?";
}

}  // namespace fsdpsim
