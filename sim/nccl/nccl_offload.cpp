// NVLS, NVLSTree, CollNet (IB SHARP) and PAT cost candidates of the NCCL model, after NCCL 2.28 src/graph/tuning.cc
// and src/enqueue.cc (docs/architecture.md §6.8, §6.10).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "sim/nccl/nccl_model.h"
#include "sim/nccl/nccl_tables.h"

namespace fsdpsim::nccl {
namespace {

// NVLS all-gather / reduce-scatter are skipped above NCCL_MAX_NVLS_ARITY local ranks (docs/architecture.md §6.7).
constexpr int32_t kMaxNvlsArity = 32;

int log2_floor(int32_t x) {
  return x <= 1 ? 0 : std::bit_width(static_cast<uint32_t>(x)) - 1;
}

bool nvls_allowed(const Call& call) {
  const Topology& t = *call.topology;
  // NVLink SHARP needs NVSwitch multicast (topology.nvls) and SM90+ (NCCL 2.17+); a profile with no NVLS kernels
  // (nvls_sms 0) has none either. It reduces only ncclSum on bf16/fp16/fp32 (docs/architecture.md §6.7).
  return t.nvls && t.gpu.arch != GpuArch::ampere && t.gpu.nvls_sms > 0 && nvls_reduction_ok(call.request) &&
         call.group.ranks_per_domain >= 2;
}

// Bus bandwidth of NVLS all-reduce inside a domain. Each of h heads reduces 1/h of the buffer with multimem.ld_reduce
// and multicasts it back with multimem.st, so a GPU sends and receives S·(1 + 1/h): algbw = B·h/(h+1), busbw =
// B·2(h−1)/(h+1) with B the NVLink rate NVLS drives (nvlsEff × NCCL's NVLink figure). sjeaugey gives algbw =
// B·n/(n+1) for n GPUs (nccl-tests #239; also nccl #2140). With h = min(ranks, 8): 8×H100 0.85·370.8·14/9 = 490
// (measured 476-480), 5..7 GPUs 420/450/472 (measured 420/440/460, nccl #1455), 8×B200 0.74·721.8·14/9 = 831
// (838-846), 72-GPU NVL72 831 (835-847; h = 72 would give 1039). This replaces 2.28's bwIntra·nvlsEff·(nCh−1)/nCh·2
// capped by bwInter, which gives 476 on 8×H100 but caps B200 at 720 (docs/architecture.md §6.8: 15 % low).
double nvls_all_reduce_gbps(const Call& call, double* nvlink_load) {
  const int32_t heads = std::min(call.group.ranks_per_domain, kNvlsHeads);
  const double h = heads;
  *nvlink_load = (h + 1) / (2 * (h - 1));  // S(1 + 1/h) wire bytes per 2S(h−1)/h-equivalent bus bytes
  return call.system.nvls_wire_gbps * 2 * (h - 1) / (h + 1);
}

// Network load per bus byte of an all-reduce that sends each domain's reduced data across once (S per domain):
// in-network reduction (NVLS+SHARP, CollNet) or a two-node tree; `egress` = 2 for a double binary tree of >= 3 domains.
double reduced_network_load(const Call& call, double egress) {
  const double n = call.group.ranks;
  return egress * n / (2 * (n - 1)) / call.group.nic_shares;
}

Candidate offload_candidate(NcclAlgo algo) {
  Candidate c;
  c.algo = algo;
  c.proto = NcclProto::simple;  // NVLS, NVLSTree, CollNet and PAT run Simple only (docs/architecture.md §6.4)
  return c;
}

// CollNet latencies (docs/architecture.md §6.4): Direct base + 2·(min(1, ppn−1)·intraLat + (ppn−1)·0.4) + interLat;
// Chain base + 2·(ppn−1)·intraLat + interLat.
double collnet_latency_us(const Call& call, NcclAlgo algo) {
  const double ppn = call.group.ranks_per_domain;
  const double intra = nvlink_hop_latency_us(call.topology->gpu.arch, algo)[proto_index(NcclProto::simple)];
  const double inter = inter_latency_us(call, algo, NcclProto::simple);
  if (algo == NcclAlgo::collnet_chain) return 2 * (ppn - 1) * intra + inter;
  return 2 * (std::min(1.0, ppn - 1) * intra + (ppn - 1) * 0.4) + inter;
}

// CollNet all-reduce: NCCL's busBw is the intra graph (CollNet uses bwIntra), Direct divided by the GPU/NIC ratio
// term f − (f−1)/2 and × 0.85 on SM90+ (docs/architecture.md §6.10), halved to algbw. The in-switch reduction sends
// S per domain, so the busbw cannot exceed twice the domain's NIC bandwidth (a bound NCCL's formula leaves out).
void add_collnet_all_reduce(const Call& call, NcclAlgo algo, std::vector<Candidate>& out) {
  const GroupShape& g = call.group;
  Candidate c = offload_candidate(algo);
  c.latency_us = collnet_latency_us(call, algo);
  double bw = call.system.ring_gbps;
  if (algo == NcclAlgo::collnet_direct) {
    double f = std::max(1.0, g.ranks_per_domain / g.nics_used);
    f -= (f - 1) / 2;
    bw /= f;
    if (call.topology->gpu.arch != GpuArch::ampere) bw *= 0.85;
  }
  bw = std::min(bw, 2 * g.domain_net_gbps);
  const double n = g.ranks;
  c.bus_bw_gbps = bw * (n - 1) / n;
  c.sms = offload_sms(call, false);
  // Inside the domain a chain (or the direct scatter + gather) moves 2S·(ppn−1)/ppn per GPU.
  c.nvlink_load = (g.ranks_per_domain - 1.0) / g.ranks_per_domain * n / (n - 1);
  c.network_load = reduced_network_load(call, 1.0);
  finish(call, c);
  out.push_back(c);
}

// CollNetDirect all-gather / reduce-scatter (2.20+; 2.27 bandwidth ppn·min(bwIntra, 0.9·bwInter), used as is on the
// total bytes): needs one GPU per NIC. The switch multicasts, so a domain receives (N−1)/N·S through its NICs.
void add_collnet_gather_scatter(const Call& call, std::vector<Candidate>& out) {
  const GroupShape& g = call.group;
  if (g.ranks_per_node > call.topology->nics_per_node) return;
  Candidate c = offload_candidate(NcclAlgo::collnet_direct);
  c.latency_us = collnet_latency_us(call, NcclAlgo::collnet_direct);
  const double bw = std::min(call.system.ring_gbps, 0.9 * g.domain_net_gbps);
  const double n = g.ranks;
  const double big_n = g.domains;
  c.bus_bw_gbps = bw * (n - 1) / n;
  c.sms = offload_sms(call, false);
  const double bus_per_s = (n - 1) / n;  // bus bytes per byte of S
  c.nvlink_load = (g.ranks_per_domain - 1.0) / g.ranks_per_domain / bus_per_s;
  c.network_load = (big_n - 1) / big_n / bus_per_s / g.nic_shares;
  finish(call, c);
  out.push_back(c);
}

}  // namespace

void add_nvls(const Call& call, std::vector<Candidate>& out) {
  if (!nvls_allowed(call)) return;
  const GroupShape& g = call.group;
  const CollectiveRequest& r = call.request;
  Candidate c = offload_candidate(NcclAlgo::nvls);
  c.sms = offload_sms(call, true);
  // NVLS latency: intraLat (25 us), + interLat (18 us) across domains (docs/architecture.md §6.4).
  c.latency_us = nvlink_hop_latency_us(call.topology->gpu.arch, NcclAlgo::nvls)[proto_index(NcclProto::simple)];
  if (r.kind == OpKind::all_reduce) {
    // Across domains NVLS needs IB SHARP (NVLS + CollNet); it is then capped by the network (2.28's interBw).
    if (g.domains > 1 && !call.topology->ib_sharp) return;
    c.bus_bw_gbps = nvls_all_reduce_gbps(call, &c.nvlink_load);
    if (g.domains > 1) {
      c.latency_us += inter_latency_us(call, NcclAlgo::nvls, NcclProto::simple);
      c.bus_bw_gbps = std::min(c.bus_bw_gbps, g.domain_net_gbps);
      c.network_load = reduced_network_load(call, 1.0);
    }
  } else if (r.kind == OpKind::all_gather || r.kind == OpKind::reduce_scatter) {
    if (g.domains > 1 || g.ranks_per_domain > kMaxNvlsArity) return;
    // NVLS AG: each GPU multicasts S/n and receives S (RS mirrors it: ld_reduce reads S from each GPU), so busbw =
    // B·(n−1)/n: 276 GB/s on 8×H100 (2.28's formula: ~182) against the ring's 360, so the ring wins unless buffers
    // are registered (sjeaugey, nccl #1083; docs/architecture.md §6.7).
    const double n = g.ranks;
    c.bus_bw_gbps = call.system.nvls_wire_gbps * (n - 1) / n;
    c.nvlink_load = n / (n - 1);
  } else {
    return;
  }
  finish(call, c);
  out.push_back(c);
}

void add_nvls_tree(const Call& call, std::vector<Candidate>& out) {
  const GroupShape& g = call.group;
  if (call.request.kind != OpKind::all_reduce || g.domains < 2 || !nvls_allowed(call)) return;
  Candidate c = offload_candidate(NcclAlgo::nvls_tree);
  // NVLSTree AR: base + intraLat + 2·log2(N)·interLat (docs/architecture.md §6.4).
  c.latency_us = nvlink_hop_latency_us(call.topology->gpu.arch, NcclAlgo::nvls_tree)[proto_index(NcclProto::simple)] +
                 2 * log2_floor(g.domains) * inter_latency_us(call, NcclAlgo::nvls_tree, NcclProto::simple);
  // bw = min(intraBw, interBw, nHeads·perChMaxNVLSTreeBw) (2.28, docs/architecture.md §6.8). interBw: the domain's
  // NICs, × 2 on two domains (each domain sends S, not 2S), × (n−1)/n for the bus bytes that do not cross. Heads across
  // domains are the GPUs with a NIC (4 heads on 4 NICs, nccl #1357; 8 channels with 8 NICs, nccl #1041).
  double nvlink_load = 0;
  const double intra = nvls_all_reduce_gbps(call, &nvlink_load);
  const double n = g.ranks;
  const double egress = g.domains == 2 ? 1.0 : 2.0;
  const double inter = g.domain_net_gbps * 2 / egress * (n - 1) / n;
  const ArchTables& tables = arch_tables(call.topology->gpu.arch);
  const double cap = g.nics_used * tables.nvls_tree_per_channel_gbps[node_index(g.domains)];
  c.bus_bw_gbps = std::min({intra, inter, cap});
  c.nvlink_load = nvlink_load;
  c.network_load = reduced_network_load(call, egress);
  c.sms = offload_sms(call, true);
  finish(call, c);
  out.push_back(c);
}

void add_collnet(const Call& call, std::vector<Candidate>& out) {
  const GroupShape& g = call.group;
  const CollectiveRequest& r = call.request;
  // CollNet (IB SHARP) needs the plugin (topology.ib_sharp) and spans domains. Reductions: Sum, not fp8 (PreMulSum
  // and fp8 are NCCL-internal to the GPU kernels; assumed absent from SHARP).
  if (!call.topology->ib_sharp || g.domains < 2) return;
  const bool reduces = r.kind != OpKind::all_gather;
  if (reduces && (r.reduce_op != ReduceOp::sum || r.dtype == DType::fp8)) return;
  if (r.kind == OpKind::all_reduce) {
    add_collnet_all_reduce(call, NcclAlgo::collnet_direct, out);
    add_collnet_all_reduce(call, NcclAlgo::collnet_chain, out);
  } else if (r.kind == OpKind::all_gather || r.kind == OpKind::reduce_scatter) {
    add_collnet_gather_scatter(call, out);
  }
}

void add_pat(const Call& call, std::vector<Candidate>& out) {
  const GroupShape& g = call.group;
  const CollectiveRequest& r = call.request;
  if (r.kind != OpKind::all_gather && r.kind != OpKind::reduce_scatter) return;
  // PAT (2.23+): one rank per node and more than one node; PAT RS refuses PreMulSum/SumPostDiv
  // (docs/architecture.md §6.7).
  if (g.ranks_per_domain != 1 || g.domains < 2) return;
  if (r.kind == OpKind::reduce_scatter && r.reduce_op != ReduceOp::sum) return;
  Candidate c = offload_candidate(NcclAlgo::pat);
  // PAT AG/RS: 8 + log2(N)·interLat/3.5 + 2.8·n (docs/architecture.md §6.4); busBw × 0.75, used as is on the total
  // bytes.
  c.latency_us = base_latency_us(call.topology->gpu.arch, NcclAlgo::pat)[proto_index(NcclProto::simple)] +
                 log2_floor(g.domains) * inter_latency_us(call, NcclAlgo::pat, NcclProto::simple) / 3.5 + 2.8 * g.ranks;
  const double n = g.ranks;
  c.bus_bw_gbps = 0.75 * g.domain_net_gbps * (n - 1) / n;
  c.sms = ring_sms(call);
  c.network_load = 1.0 / g.nic_shares;  // each GPU sends and receives (n−1)/n·S through its NIC share
  finish(call, c);
  out.push_back(c);
}

}  // namespace fsdpsim::nccl
