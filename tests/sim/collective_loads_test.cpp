// Link capacities and loads of the NCCL model: what the contention solver divides among concurrent collectives. A
// collective running alone must not be slowed by its own loads: bus_bw × load <= capacity on NVLink and on the NIC
// share. Also the graph values the capacities come from (docs/architecture.md §6.5).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/units.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "sim/nccl/collective_model.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

CollectiveRequest request(const Topology& t, OpKind kind, int32_t world, int32_t size, int32_t stride, int64_t bytes) {
  CollectiveRequest r;
  r.kind = kind;
  r.size_bytes = bytes;
  r.reduce_op = kind == OpKind::all_gather ? ReduceOp::none : ReduceOp::sum;
  r.placement = place_group(t, world, size, stride);
  return r;
}

CollectiveCost cost(const Topology& t, OpKind kind, int32_t size, int32_t stride, int64_t bytes) {
  return collective_cost(request(t, kind, size * stride, size, stride, bytes), t);
}

TEST(CollectiveCapacity, H100) {
  const Topology t = topology_preset("dgx-h100-ndr");
  // NVLink: NCCL's figure 18 links × 20.6 GB/s = 370.8 GB/s (450 × 20.6/25). NIC share: 8 NICs × 0.92 × 50 GB/s / 8.
  EXPECT_NEAR(nvlink_capacity_bytes_per_s(t), 370.8e9, 1e3);
  EXPECT_NEAR(network_capacity_bytes_per_s(t), 46e9, 1e3);
}

TEST(CollectiveCapacity, A100AndGb200) {
  const Topology a100 = topology_preset("dgx-a100-hdr");
  // 12 × 20 = 240 GB/s (300 × 20/25); 8 × 0.92 × 25 / 8 = 23 GB/s.
  EXPECT_NEAR(nvlink_capacity_bytes_per_s(a100), 240e9, 1e3);
  EXPECT_NEAR(network_capacity_bytes_per_s(a100), 23e9, 1e3);
  const Topology gb200 = topology_preset("gb200-nvl72");
  // 18 × 40.1 = 721.8 GB/s (900 × 40.1/50); 4 NICs × 46 / 4 GPUs = 46 GB/s.
  EXPECT_NEAR(nvlink_capacity_bytes_per_s(gb200), 721.8e9, 1e3);
  EXPECT_NEAR(network_capacity_bytes_per_s(gb200), 46e9, 1e3);
}

// The ring graph of docs/architecture.md §6.5, seen through a forced ring's Simple bandwidth.
double ring_gbps(const Topology& t, int32_t size, int32_t stride) {
  CollectiveRequest r = request(t, OpKind::all_gather, size * stride, size, stride, kGiB);
  r.algo = NcclAlgo::ring;
  r.proto = NcclProto::simple;
  return collective_cost(r, t).bus_bw_bytes_per_s / 1e9;
}

TEST(CollectiveGraph, RingChannelsTimesSpeedPerSystem) {
  // H100: speeds ≤ 370.8 from 60 down: 6 × 60 = 360 (ties later keep it), duplicated at half speed: 12 × 30 = 360.
  EXPECT_DOUBLE_EQ(ring_gbps(topology_preset("dgx-h100-ndr"), 8, 1), 360);
  // A100: 6 × 40 = 240 → 12 × 20 = 240. B200: 8 × 90 = 720 → 16 × 45 = 720 (docs/architecture.md §6.5).
  EXPECT_DOUBLE_EQ(ring_gbps(topology_preset("dgx-a100-hdr"), 8, 1), 240);
  EXPECT_DOUBLE_EQ(ring_gbps(topology_preset("hgx-b200-ndr"), 8, 1), 720);
  // H800 (8 links, 164.8): 2 × 60 = 120, 3 × 50 = 150, 4 × 40 = 160 best; 40 < 50 with 4 channels still duplicates:
  // 8 × 20 = 160.
  const Topology h800 = load_topology(std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/nccl/h800-nvlink400.yaml");
  EXPECT_DOUBLE_EQ(ring_gbps(h800, 8, 1), 160);
}

TEST(CollectiveGraph, RingsAcrossDomainsAreCappedByTheNicShares) {
  // 2 H100 nodes: min(360 NVLink, 8 NICs × 46) = 360 (docs/architecture.md §6.5; inter <= 48 per NDR NIC).
  EXPECT_DOUBLE_EQ(ring_gbps(topology_preset("dgx-h100-ndr"), 16, 1), 360);
  // 2 A100 nodes, 8 HDR: min(240, 8 × 23 = 184) = 184 (docs/architecture.md §6.6).
  EXPECT_NEAR(ring_gbps(topology_preset("dgx-a100-hdr"), 16, 1), 184, 1e-9);
  // One rank per H100 node: every hop is a network hop through the GPU's own NIC: 46.
  EXPECT_NEAR(ring_gbps(topology_preset("dgx-h100-ndr"), 4, 8), 46, 1e-9);
  // Two NVL72 racks: 16 NICs between domains (NCCL 2.27+) × 46 = 736 > the NVLink ring's 720.
  EXPECT_DOUBLE_EQ(ring_gbps(topology_preset("gb200-nvl72"), 144, 1), 720);
  // 8 ranks per rack over two racks (stride 9): 8 NIC shares × 46 = 368 below the NVLink ring.
  EXPECT_NEAR(ring_gbps(topology_preset("gb200-nvl72"), 16, 9), 368, 1e-9);
}

TEST(CollectiveLoads, RingInsideOneDomain) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost simple = cost(t, OpKind::all_gather, 8, 1, kGiB);
  // One NVLink byte per bus byte; no network.
  EXPECT_DOUBLE_EQ(simple.nvlink_load, 1.0);
  EXPECT_DOUBLE_EQ(simple.network_load, 0.0);
  // LL sends a flag with every 4 data bytes: 2 wire bytes per bus byte.
  EXPECT_DOUBLE_EQ(cost(t, OpKind::all_gather, 8, 1, 1024).nvlink_load, 2.0);
}

TEST(CollectiveLoads, RingAcrossDomains) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost c = cost(t, OpKind::all_gather, 16, 1, kGiB);
  // Each channel: 7 of a node's 8 ranks send over NVLink (7/8), the 8th through a NIC; the node's egress (every bus
  // byte) spreads over 8 NIC shares: 1/8 per share.
  EXPECT_DOUBLE_EQ(c.nvlink_load, 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(c.network_load, 1.0 / 8.0);
  // One rank per node: all of it through the GPU's own NIC.
  const CollectiveCost rail = cost(t, OpKind::all_gather, 4, 8, kGiB);
  EXPECT_EQ(rail.algo, NcclAlgo::ring);
  EXPECT_DOUBLE_EQ(rail.nvlink_load, 0.0);
  EXPECT_DOUBLE_EQ(rail.network_load, 1.0);
}

TEST(CollectiveLoads, NvlsMovesFewerWireBytesThanBusBytes) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost ar = cost(t, OpKind::all_reduce, 8, 1, kGiB);
  ASSERT_EQ(ar.algo, NcclAlgo::nvls);
  // Each GPU sends and receives S·(1 + 1/8) against 2S·7/8 bus bytes: (9/8) / (14/8) = 9/14.
  EXPECT_DOUBLE_EQ(ar.nvlink_load, 9.0 / 14.0);
  // Alone it drives 490.3 × 9/14 = 315.2 GB/s = 0.85 × 370.8 of the port.
  EXPECT_NEAR(ar.bus_bw_bytes_per_s * ar.nvlink_load, 0.85 * 370.8e9, 1e3);
  // NVLS all-gather: each GPU receives S against S·7/8 bus bytes: 8/7.
  CollectiveRequest ag = request(t, OpKind::all_gather, 8, 8, 1, kGiB);
  ag.algo = NcclAlgo::nvls;
  EXPECT_DOUBLE_EQ(collective_cost(ag, t).nvlink_load, 8.0 / 7.0);
}

TEST(CollectiveLoads, InNetworkAllGather) {
  const Topology t = topology_preset("dgx-h100-ndr-sharp");
  const CollectiveCost c = cost(t, OpKind::all_gather, 64, 1, kMiB);
  ASSERT_EQ(c.algo, NcclAlgo::collnet_direct);
  // The switch multicasts: a node receives (N−1)/N·S through 8 NIC shares, against (n−1)/n·S bus bytes:
  // (7/8) / (63/64) / 8 = 0.875 / 0.984375 / 8 = 0.11111.
  EXPECT_NEAR(c.network_load, (7.0 / 8.0) / (63.0 / 64.0) / 8.0, 1e-12);
}

TEST(CollectiveLoads, PatSendsEveryBusByteThroughItsNic) {
  const Topology t = topology_preset("dgx-h100-ndr");
  const CollectiveCost c = cost(t, OpKind::all_gather, 128, 8, 128 * kKiB);
  ASSERT_EQ(c.algo, NcclAlgo::pat);
  EXPECT_DOUBLE_EQ(c.network_load, 1.0);
  EXPECT_DOUBLE_EQ(c.nvlink_load, 0.0);
}

// Alone, no collective is slowed by its own loads, on any preset, for any group shape, op, size, dtype and
// registration the model distinguishes.
TEST(CollectiveLoads, AloneNoCollectiveExceedsEitherCapacity) {
  const std::vector<int32_t> sizes{2, 4, 8, 16, 32, 64, 72, 128, 144, 288};
  const std::vector<int32_t> strides{1, 2, 4, 8, 9, 18, 72};
  const std::vector<int64_t> bytes{1024, kMiB, 64 * kMiB, kGiB};
  int checked = 0;
  for (const std::string& name : topology_preset_names()) {
    const Topology t = topology_preset(name);
    const double nvlink = nvlink_capacity_bytes_per_s(t);
    const double network = network_capacity_bytes_per_s(t);
    const int32_t world = 4 * t.nvlink_domain_gpus * (t.nvlink_domain_gpus < 16 ? 16 : 1);
    for (int32_t size : sizes) {
      for (int32_t stride : strides) {
        if (int64_t{size - 1} * stride >= world) continue;
        GroupPlacement placement;
        try {
          placement = place_group(t, world, size, stride);
        } catch (const ConfigError&) {
          continue;  // uneven over NVLink domains: not a group the simulator takes
        }
        for (OpKind kind : {OpKind::all_gather, OpKind::reduce_scatter, OpKind::all_reduce, OpKind::all_to_all}) {
          for (int64_t b : bytes) {
            for (DType dtype : {DType::bf16, DType::fp8}) {
              for (bool registered : {false, true}) {
                CollectiveRequest r;
                r.kind = kind;
                r.size_bytes = b;
                r.dtype = dtype;
                r.reduce_op = kind == OpKind::all_gather ? ReduceOp::none : ReduceOp::sum;
                r.placement = placement;
                r.registered = registered;
                const CollectiveCost c = collective_cost(r, t);
                const std::string what = name + " " + std::string(to_string(kind)) + " size " + std::to_string(size) +
                                         " stride " + std::to_string(stride) + " " + std::string(to_string(c.algo)) +
                                         "/" + std::string(to_string(c.proto));
                EXPECT_LE(c.bus_bw_bytes_per_s * c.nvlink_load, nvlink * (1 + 1e-9)) << what;
                EXPECT_LE(c.bus_bw_bytes_per_s * c.network_load, network * (1 + 1e-9)) << what;
                if (placement.domains == 1) {
                  EXPECT_EQ(c.network_load, 0.0) << what;
                }
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Every algorithm the model can choose, forced where NCCL allows it, keeps the same promise.
TEST(CollectiveLoads, AloneEveryForcedAlgorithmStaysWithinCapacity) {
  const Topology t = topology_preset("dgx-h100-ndr-sharp");
  int checked = 0;
  for (int32_t size : {8, 16, 64}) {
    for (OpKind kind : {OpKind::all_gather, OpKind::reduce_scatter, OpKind::all_reduce}) {
      for (NcclAlgo algo : all_nccl_algos()) {
        CollectiveRequest r = request(t, kind, 64, size, 1, kGiB);
        r.algo = algo;
        CollectiveCost c;
        try {
          c = collective_cost(r, t);
        } catch (const ConfigError&) {
          continue;  // NCCL cannot run it here
        }
        EXPECT_LE(c.bus_bw_bytes_per_s * c.nvlink_load, nvlink_capacity_bytes_per_s(t) * (1 + 1e-9)) << to_string(algo);
        EXPECT_LE(c.bus_bw_bytes_per_s * c.network_load, network_capacity_bytes_per_s(t) * (1 + 1e-9))
            << to_string(algo);
        ++checked;
      }
    }
  }
  // One node: AG ring, nvls; RS ring, nvls; AR ring, tree, nvls = 7. Two and eight nodes each: AG ring, collnet_direct;
  // RS the same; AR ring, tree, nvls (with IB SHARP), nvls_tree, collnet_direct, collnet_chain = 10. 7 + 10 + 10 = 27.
  EXPECT_EQ(checked, 27);
}

}  // namespace
}  // namespace fsdpsim
