// The NCCL model's algorithm choice, latency floors (docs/architecture.md §6.16), SM counts and error paths.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/units.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "sim/nccl/collective_model.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

// A request for `size` consecutive ranks (stride 1) or one rank per node (stride = gpus_per_node).
CollectiveRequest request(const Topology& t, OpKind kind, int32_t size, int32_t stride, int64_t bytes) {
  CollectiveRequest r;
  r.kind = kind;
  r.size_bytes = bytes;
  r.reduce_op = kind == OpKind::all_gather ? ReduceOp::none : ReduceOp::sum;
  r.placement = place_group(t, size * stride, size, stride);
  return r;
}

std::string error_of(const CollectiveRequest& r, const Topology& t) {
  try {
    (void)collective_cost(r, t);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// ---- Latency floors (docs/architecture.md §6.16) ----

TEST(CollectiveLatency, RingLLAllGatherOnOneH100Node) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost c = collective_cost(request(t, OpKind::all_gather, 8, 1, 1024), t);
  // Ring LL: base 6.6 + 7 steps × 0.6 (NVLink LL hop) = 10.8 us (docs/architecture.md §6.4).
  EXPECT_EQ(c.algo, NcclAlgo::ring);
  EXPECT_EQ(c.proto, NcclProto::ll);
  EXPECT_EQ(c.latency_ns, 10'800);
}

TEST(CollectiveLatency, RingLLAllReduceOnOneH100Node) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost c = collective_cost(request(t, OpKind::all_reduce, 8, 1, 1024), t);
  // Ring LL: 6.6 + 2·7 × 0.6 = 15.0 us (measured 12.5-16.4 on 8×H20; docs/architecture.md §6.16).
  EXPECT_EQ(c.algo, NcclAlgo::ring);
  EXPECT_EQ(c.proto, NcclProto::ll);
  EXPECT_EQ(c.latency_ns, 15'000);
}

TEST(CollectiveLatency, RingLLGrowsWithRanksAcrossNodes) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_gather, 128, 1, 4096);
  r.algo = NcclAlgo::ring;
  r.proto = NcclProto::ll;
  // docs/architecture.md §6.4: ring LL ≈ 6.6 + (n − N)·max(0.6, 1.0 net overhead) + (N − 1)·2.7; n = 128, N = 16:
  // 6.6 + 112 × 1.0 + 15 × 2.7 = 6.6 + 112 + 40.5 = 159.1 us.
  EXPECT_EQ(collective_cost(r, t).latency_ns, 159'100);
}

TEST(CollectiveLatency, PatAtOneRankPerNode) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_gather, 128, 8, 4096);
  r.algo = NcclAlgo::pat;
  // docs/architecture.md §6.4: 8 + log2(128)·14/3.5 + 2.8·128 = 8 + 7 × 4 + 358.4 = 394.4 us.
  EXPECT_EQ(collective_cost(r, t).latency_ns, 394'400);
}

TEST(CollectiveLatency, NvlsTreeOnTwoNodes) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_reduce, 16, 1, 4);
  r.dtype = DType::fp32;
  r.algo = NcclAlgo::nvls_tree;
  // docs/architecture.md §6.4: 25 + 2·log2(2)·20.9 = 66.8 us (NCCL 2.28.9+; the 46-47 us measured on 2×8 H20 ran
  // 2.21's 14 us hop).
  const CollectiveCost c = collective_cost(r, t);
  EXPECT_EQ(c.latency_ns - c.pipeline_fill_ns, 66'800);
  // On top, the chunk pipeline fills (sim/nccl/nccl_pipeline.cpp): a 4-byte call is one chunk step, which is h100-sxm's
  // 4.15 us handshake (plus 4 B / 128 pieces at ~2 GB/s, nothing), filled 1.15 times: 4.7725 us.
  EXPECT_NEAR(static_cast<double>(c.pipeline_fill_ns), 4'772.5, 1.0);
}

TEST(CollectiveLatency, TreeLLAt32A100NodesWithFourNics) {
  const Topology t = load_topology(std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/nccl/a100-4x-hdr.yaml");
  const CollectiveCost c = collective_cost(request(t, OpKind::all_reduce, 256, 1, 8), t);
  // docs/architecture.md §6.16: tree LL 6.8 + 2·((8−1)·0.6 + log2(32)·5.0) = 6.8 + 2·(4.2 + 25) = 65.2 us; measured
  // ~63 us (nccl #652).
  EXPECT_EQ(c.algo, NcclAlgo::tree);
  EXPECT_EQ(c.proto, NcclProto::ll);
  EXPECT_EQ(c.latency_ns, 65'200);
  EXPECT_NEAR(static_cast<double>(c.time_ns), 63'000.0, 0.10 * 63'000.0);
}

// ---- Algorithm choice ----

TEST(CollectiveChoice, NvlsAllReduceOnOneH100NodeForLargeSizes) {
  const Topology t = topology_preset("dgx-h100-ndr");
  // 1 GiB: NVLS 25 us + 2·7/8·1 GiB / 490.3 GB/s = 3.85 ms < ring 56 us + 1.879e9 / 360 GB/s = 5.28 ms.
  EXPECT_EQ(collective_cost(request(t, OpKind::all_reduce, 8, 1, kGiB), t).algo, NcclAlgo::nvls);
}

TEST(CollectiveChoice, RingLLForSmallMessages) {
  const Topology t = topology_preset("dgx-h100-ndr");
  // 4 KiB: ring LL 15 us + 7168 B / 141 GB/s = 15.05 us < NVLS 25 us.
  const CollectiveCost ar = collective_cost(request(t, OpKind::all_reduce, 8, 1, 4096), t);
  EXPECT_EQ(ar.algo, NcclAlgo::ring);
  EXPECT_EQ(ar.proto, NcclProto::ll);
}

TEST(CollectiveChoice, H200SwitchesFromRingLLToNvlsBetweenOneAndTwoMiB) {
  // ml-engineering: 8×H200 AR runs ring LL up to 1 MiB and NVLS Simple from 2 MiB (docs/architecture.md §6.16).
  const Topology t = topology_preset("hgx-h200-ndr");
  // 1 MiB (bus bytes 2·7/8·2^20 = 1835008): ring LL 15 + 1835008/141e3 = 28.01 us; NVLS 25 + 1835008/490.3e3 = 28.74.
  const CollectiveCost one = collective_cost(request(t, OpKind::all_reduce, 8, 1, kMiB), t);
  EXPECT_EQ(one.algo, NcclAlgo::ring);
  EXPECT_EQ(one.proto, NcclProto::ll);
  // 2 MiB: ring LL 15 + 26.03 = 41.03 us; LL128 (14 + 14·1.9) + 3670016/331.2e3 = 51.7; NVLS 25 + 7.49 = 32.49.
  const CollectiveCost two = collective_cost(request(t, OpKind::all_reduce, 8, 1, 2 * kMiB), t);
  EXPECT_EQ(two.algo, NcclAlgo::nvls);
  EXPECT_EQ(two.proto, NcclProto::simple);
}

TEST(CollectiveChoice, RingForAllGatherAndReduceScatterWithoutRegistration) {
  const Topology t = topology_preset("dgx-h100-ndr");
  // NVLS AG/RS: 0.85 × 370.8 × 7/8 = 275.8 GB/s busbw, below the ring's 360 (docs/architecture.md §6.7, last
  // bullet).
  for (OpKind kind : {OpKind::all_gather, OpKind::reduce_scatter}) {
    EXPECT_EQ(collective_cost(request(t, kind, 8, 1, kGiB), t).algo, NcclAlgo::ring) << to_string(kind);
  }
}

TEST(CollectiveChoice, NvlsAllGatherWithRegisteredBuffers) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_gather, 8, 1, kGiB);
  r.registered = true;
  // Ranked as time × (1 + 0.025·SMs): ring (1.6)/360 = 0.00444 > NVLS (1 + 0.025·6 = 1.15)/275.8 = 0.00417 per GB.
  const CollectiveCost c = collective_cost(r, t);
  EXPECT_EQ(c.algo, NcclAlgo::nvls);
  EXPECT_EQ(c.sms, 6);  // h100-sxm registered_sms
}

TEST(CollectiveChoice, AvgReduceScatterIsNeverNvlsOrPat) {
  const Topology t = topology_preset("dgx-h100-ndr");
  for (ReduceOp op : {ReduceOp::avg, ReduceOp::premul_sum}) {
    CollectiveRequest node = request(t, OpKind::reduce_scatter, 8, 1, kGiB);
    node.reduce_op = op;
    node.registered = true;  // with Sum this picks NVLS (test above)
    EXPECT_EQ(collective_cost(node, t).algo, NcclAlgo::ring) << to_string(op);
    CollectiveRequest rail = request(t, OpKind::reduce_scatter, 128, 8, 128 * kKiB);
    rail.reduce_op = op;  // with Sum this picks PAT (next test)
    EXPECT_EQ(collective_cost(rail, t).algo, NcclAlgo::ring) << to_string(op);
    rail.algo = NcclAlgo::pat;
    EXPECT_NE(error_of(rail, t), "") << to_string(op);
  }
}

TEST(CollectiveChoice, PatForOneRankPerNodeAtScaleWithSmallSizes) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveRequest r = request(t, OpKind::all_gather, 128, 8, 128 * kKiB);
  // PAT 394.4 us + 131072·127/128 B / (0.75 × 46 × 127/128 GB/s) = 398.2 us; ring LL with one rank per node pays
  // 6.6 + 127 × 5.0 (Tree's NET LL hop) = 641.6 us before any byte.
  EXPECT_EQ(collective_cost(r, t).algo, NcclAlgo::pat);
  // Sum reduce-scatter takes PAT as well.
  CollectiveRequest rs = request(t, OpKind::reduce_scatter, 128, 8, 128 * kKiB);
  EXPECT_EQ(collective_cost(rs, t).algo, NcclAlgo::pat);
}

TEST(CollectiveChoice, NoNvlsAllGatherOnA72RankNvl72Group) {
  const Topology t = topology_preset("gb200-nvl72");
  CollectiveRequest r = request(t, OpKind::all_gather, 72, 1, kGiB);
  r.registered = true;  // even where registration would favour NVLS: 72 local ranks > NCCL_MAX_NVLS_ARITY (32)
  EXPECT_EQ(collective_cost(r, t).algo, NcclAlgo::ring);
  r.algo = NcclAlgo::nvls;
  EXPECT_NE(error_of(r, t), "");
  // 32 ranks of the same rack may use it.
  CollectiveRequest small = request(t, OpKind::all_gather, 32, 1, kGiB);
  small.algo = NcclAlgo::nvls;
  EXPECT_EQ(collective_cost(small, t).algo, NcclAlgo::nvls);
}

TEST(CollectiveChoice, CollNetOnlyWithIbSharp) {
  const Topology sharp = topology_preset("dgx-h100-ndr-sharp");
  const Topology plain = topology_preset("dgx-h100-ndr");
  // 8 nodes, 1 MiB all-gather: CollNetDirect 2·(3.7 + 7·0.4) + 31 = 44 us + 1032192 B / (331.2·63/64 GB/s) = 47.2 us;
  // ring LL 6.6 + 56 × 1.0 + 7 × 2.7 = 81.5 us + 1032192 / 20.4e3 = 132.1 us.
  EXPECT_EQ(collective_cost(request(sharp, OpKind::all_gather, 64, 1, kMiB), sharp).algo, NcclAlgo::collnet_direct);
  EXPECT_EQ(collective_cost(request(plain, OpKind::all_gather, 64, 1, kMiB), plain).algo, NcclAlgo::ring);
  CollectiveRequest forced = request(plain, OpKind::all_reduce, 64, 1, kGiB);
  forced.algo = NcclAlgo::collnet_chain;
  EXPECT_NE(error_of(forced, plain), "");
  EXPECT_EQ(collective_cost(forced, sharp).algo, NcclAlgo::collnet_chain);
}

TEST(CollectiveChoice, Fp8ReductionsAvoidRingsOfMoreThanEightRanks) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_reduce, 16, 1, kGiB);
  r.dtype = DType::fp8;
  // 16 ranks: the ring's time × 1024 loses to the tree (NVLS has no fp8 reduction), though the tree is slower.
  const CollectiveCost c = collective_cost(r, t);
  EXPECT_EQ(c.algo, NcclAlgo::tree);
  r.dtype = DType::bf16;
  EXPECT_NE(collective_cost(r, t).algo, NcclAlgo::tree);
  // 8 ranks: no penalty, the ring wins over the tree.
  CollectiveRequest node = request(t, OpKind::all_reduce, 8, 1, kGiB);
  node.dtype = DType::fp8;
  EXPECT_EQ(collective_cost(node, t).algo, NcclAlgo::ring);
}

TEST(CollectiveChoice, ForcedProtocol) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_gather, 8, 1, kGiB);
  r.proto = NcclProto::ll128;
  const CollectiveCost c = collective_cost(r, t);
  // Ring LL128: min(0.92 × 360, 12 × 36.7) = 331.2 GB/s.
  EXPECT_EQ(c.proto, NcclProto::ll128);
  EXPECT_DOUBLE_EQ(c.bus_bw_bytes_per_s, 331.2e9);
}

TEST(CollectiveChoice, AllToAllUsesTheSlowestLink) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost in_node = collective_cost(request(t, OpKind::all_to_all, 8, 1, kGiB), t);
  // One domain: NVLink at the ring's effective 360 GB/s; latency 8.4 + 3.4 = 11.8 us.
  EXPECT_EQ(in_node.algo, NcclAlgo::p2p);
  EXPECT_DOUBLE_EQ(in_node.bus_bw_bytes_per_s, 360e9);
  EXPECT_EQ(in_node.latency_ns, 11'800);
  // Across 2 nodes: this GPU's NIC share, 8 × 0.92 × 50 / 8 = 46 GB/s; latency 8.4 + 14 = 22.4 us.
  const CollectiveCost across = collective_cost(request(t, OpKind::all_to_all, 16, 1, kGiB), t);
  EXPECT_NEAR(across.bus_bw_bytes_per_s, 46e9, 1e3);
  EXPECT_EQ(across.latency_ns, 22'400);
}

TEST(CollectiveChoice, TimeIsLatencyPlusBusBytesOverBusBandwidth) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost c = collective_cost(request(t, OpKind::all_gather, 8, 1, 8 * kGiB), t);
  // bus bytes 8 GiB × 7/8 = 7516192768; ring Simple 32.2 us + 7516192768 / 360e9 s = 32.2 + 20878.3 us.
  EXPECT_EQ(c.bus_bytes, 7'516'192'768);
  EXPECT_EQ(c.latency_ns, 32'200);
  EXPECT_NEAR(static_cast<double>(c.time_ns), 32'200 + 7'516'192'768 / 360e9 * 1e9, 1.0);
}

TEST(CollectiveChoice, AGroupOfOneCostsNothing) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost c = collective_cost(request(t, OpKind::all_reduce, 1, 1, kGiB), t);
  EXPECT_EQ(c.time_ns, 0);
  EXPECT_EQ(c.latency_ns, 0);
  EXPECT_EQ(c.bus_bytes, 0);
  EXPECT_EQ(c.sms, 0);
  EXPECT_EQ(c.nvlink_load, 0);
  EXPECT_EQ(c.network_load, 0);
  EXPECT_EQ(predicted_busbw_bytes_per_s(request(t, OpKind::all_reduce, 1, 1, kGiB), t), 0);
}

// ---- SMs (docs/architecture.md §6.11) ----

TEST(CollectiveSms, FromTheProfileAndTheShape) {
  const Topology h100 = topology_preset("dgx-h100-ndr");
  // Ring on one node: ring_sms 24; multi-node Hopper rings run 16 channels; NVLS 16 (NVLS_NCHANNELS_SM90).
  EXPECT_EQ(collective_cost(request(h100, OpKind::all_gather, 8, 1, kGiB), h100).sms, 24);
  EXPECT_EQ(collective_cost(request(h100, OpKind::all_gather, 16, 1, kGiB), h100).sms, 16);
  EXPECT_EQ(collective_cost(request(h100, OpKind::all_reduce, 8, 1, kGiB), h100).sms, 16);
  // Blackwell: ring 16 (2.28's cap), NVLS 24 (b200 profile).
  const Topology b200 = topology_preset("hgx-b200-ndr");
  EXPECT_EQ(collective_cost(request(b200, OpKind::all_gather, 8, 1, kGiB), b200).sms, 16);
  EXPECT_EQ(collective_cost(request(b200, OpKind::all_reduce, 8, 1, kGiB), b200).sms, 24);
  // Registered NVLS all-reduce: registered_sms (b200: 8).
  CollectiveRequest reg = request(b200, OpKind::all_reduce, 8, 1, kGiB);
  reg.registered = true;
  EXPECT_EQ(collective_cost(reg, b200).sms, 8);
}

TEST(CollectiveSms, SmallCallsUseFewerChannels) {
  // NCCL 2.28 topoGetAlgoInfo drops a ring/tree call's channels while bytes < channels × threads × threshold:
  // Simple 512 threads × 64 bytes = 32 KiB a channel, LL128 640 × 8 = 5 KiB, ring LL 512 × 8 × ranks.
  const Topology h100 = topology_preset("dgx-h100-ndr");
  const auto sms = [&](OpKind kind, int32_t ranks, int64_t bytes, NcclAlgo algo, NcclProto proto) {
    CollectiveRequest r = request(h100, kind, ranks, 1, bytes);
    r.algo = algo;
    r.proto = proto;
    return collective_cost(r, h100).sms;
  };
  EXPECT_EQ(sms(OpKind::all_gather, 8, kGiB, NcclAlgo::ring, NcclProto::simple), 24);      // all 24
  EXPECT_EQ(sms(OpKind::all_gather, 8, 256 << 10, NcclAlgo::ring, NcclProto::simple), 8);  // 256 KiB / 32 KiB
  EXPECT_EQ(sms(OpKind::all_gather, 8, 1 << 10, NcclAlgo::ring, NcclProto::simple), 1);
  EXPECT_EQ(sms(OpKind::all_gather, 8, 64 << 10, NcclAlgo::ring, NcclProto::ll), 2);      // 64 KiB / (4 KiB × 8)
  EXPECT_EQ(sms(OpKind::all_gather, 8, 64 << 10, NcclAlgo::ring, NcclProto::ll128), 12);  // 65,536 / 5,120
  // The communicator still sets up all 24 (NCCL's buffers, the memory model's count; the registered-buffer penalty).
  CollectiveRequest small = request(h100, OpKind::all_gather, 8, 1, 1 << 10);
  small.algo = NcclAlgo::ring;
  small.proto = NcclProto::simple;
  EXPECT_EQ(collective_cost(small, h100).channels, 24);
  // Tree on two nodes: 16 channels at most (multi-node Hopper), 2 for 64 KiB.
  EXPECT_EQ(sms(OpKind::all_reduce, 16, 1 << 20, NcclAlgo::tree, NcclProto::simple), 16);
  EXPECT_EQ(sms(OpKind::all_reduce, 16, 64 << 10, NcclAlgo::tree, NcclProto::simple), 2);
}

TEST(CollectiveSms, ChangingTheProfileChangesTheCount) {
  Topology t = topology_preset("dgx-h100-ndr");
  t.gpu.ring_sms = 32;
  t.gpu.nvls_sms = 12;
  EXPECT_EQ(collective_cost(request(t, OpKind::all_gather, 8, 1, kGiB), t).sms, 32);
  EXPECT_EQ(collective_cost(request(t, OpKind::all_reduce, 8, 1, kGiB), t).sms, 12);
}

// ---- Errors ----

TEST(CollectiveErrors, ForcedAlgorithmNcclCannotRun) {
  const Topology t = topology_preset("dgx-a100-hdr");
  CollectiveRequest r = request(t, OpKind::all_gather, 8, 1, kGiB);
  r.algo = NcclAlgo::tree;  // Tree is all-reduce only
  const std::string message = error_of(r, t);
  EXPECT_NE(message.find("CollectiveRequest"), std::string::npos) << message;
  EXPECT_NE(message.find("algo tree"), std::string::npos) << message;
  EXPECT_NE(message.find("dgx-a100-hdr"), std::string::npos) << message;
  EXPECT_NE(message.find("valid algo/proto for this call: ring/ll, ring/ll128, ring/simple"), std::string::npos)
      << message;
}

TEST(CollectiveErrors, ForcedProtocolNcclCannotRun) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_reduce, 8, 1, kGiB);
  r.algo = NcclAlgo::nvls;
  r.proto = NcclProto::ll;  // NVLS runs Simple only
  const std::string message = error_of(r, t);
  EXPECT_NE(message.find("algo nvls with proto ll"), std::string::npos) << message;
  EXPECT_NE(message.find("nvls/simple"), std::string::npos) << message;
}

TEST(CollectiveErrors, NetworkWithoutBandwidth) {
  Topology t = topology_preset("dgx-h100-ndr");
  t.nic_bw_bytes_per_s = 0;
  const std::string message = error_of(request(t, OpKind::all_gather, 16, 1, kGiB), t);
  EXPECT_NE(message.find("dgx-h100-ndr"), std::string::npos) << message;
  EXPECT_NE(message.find("set nic_bw"), std::string::npos) << message;
  // Inside one node the network does not matter.
  EXPECT_EQ(error_of(request(t, OpKind::all_gather, 8, 1, kGiB), t), "");
}

TEST(CollectiveErrors, NvlinkWithoutBandwidth) {
  Topology t = topology_preset("dgx-h100-ndr");
  t.nvlink_bw_bytes_per_s = 0;
  const std::string message = error_of(request(t, OpKind::all_gather, 8, 1, kGiB), t);
  EXPECT_NE(message.find("set nvlink_bw"), std::string::npos) << message;
  // One rank per node never uses NVLink.
  EXPECT_EQ(error_of(request(t, OpKind::all_gather, 4, 8, kGiB), t), "");
}

TEST(CollectiveErrors, NotACollectiveIsAnInternalError) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest r = request(t, OpKind::all_gather, 8, 1, kGiB);
  r.kind = OpKind::compute;
  EXPECT_THROW((void)collective_cost(r, t), InternalError);
}

TEST(CollectiveNames, EveryAlgorithmAndProtocolHasAName) {
  EXPECT_EQ(all_nccl_algos().size(), 8U);
  EXPECT_EQ(to_string(NcclAlgo::nvls_tree), "nvls_tree");
  EXPECT_EQ(to_string(NcclAlgo::collnet_direct), "collnet_direct");
  EXPECT_EQ(to_string(NcclAlgo::p2p), "p2p");
  EXPECT_EQ(all_nccl_protos().size(), 3U);
  EXPECT_EQ(to_string(NcclProto::ll128), "ll128");
}

}  // namespace
}  // namespace fsdpsim
